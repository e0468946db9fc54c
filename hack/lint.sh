#!/usr/bin/env bash
# gofmt and go vet over every module.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
unformatted=$(gofmt -l $(modules) $(standalone_modules) hack/cluster/wrapper 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
mapfile -t pkgs < <(package_patterns)
go vet "${pkgs[@]}"
for m in $(standalone_modules); do (cd "$m" && GOWORK=off go vet ./...); done
echo "lint: ok"
