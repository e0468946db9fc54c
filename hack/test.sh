#!/usr/bin/env bash
# Runs the tests of every workspace module in one `go test` invocation (packages build and run in parallel).
# Extra arguments go to `go test`. Integration tests use the control plane named by FLOTILLA_KUBECONFIG,
# or start a private one (see kit/testenv).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mapfile -t pkgs < <(package_patterns)
rc=0
go test "$@" "${pkgs[@]}" || rc=$?
# Modules outside go.work (lib.sh standalone_modules), each on its own.
for m in $(standalone_modules); do (cd "$ROOT/$m" && GOWORK=off go test "$@" ./...) || rc=$?; done
exit $rc
