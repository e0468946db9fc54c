#!/usr/bin/env bash
# gofmt and go vet over every module.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
unformatted=$(gofmt -l $(modules) hack/cluster/wrapper 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
mapfile -t pkgs < <(package_patterns)
go vet "${pkgs[@]}"
echo "lint: ok"
