#!/usr/bin/env bash
# `make verify`: everything generated is regenerated and must match what is committed; modules are tidy and
# pin one Kubernetes version; code is formatted and vetted; every kustomize overlay renders.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
step() { echo "== $*"; }

step "go.work"
hack/update-workspace.sh
git diff --exit-code -- go.work

step "generated code and CRDs"
hack/verify-codegen.sh

step "kit/README.md flags and gates of each binary"
hack/gen-flags-doc.sh
git diff --exit-code -- kit/README.md || { echo "kit/README.md is stale: run hack/gen-flags-doc.sh"; exit 1; }

step "go.mod tidy"
for m in $(modules) $(standalone_modules); do
  (cd "$m" && GOWORK=off go mod tidy -diff >/dev/null) || { echo "$m: go.mod/go.sum not tidy (run: cd $m && GOWORK=off go mod tidy)"; exit 1; }
done

step "Kubernetes library versions"
hack/verify-versions.sh

step "lint"
hack/lint.sh

step "client module used from another module"
# What a consumer does after `go get`: a module outside this repo (and outside go.work) builds the example
# against the client and apis modules (replaced by the local copies, as they are not tagged yet).
consumer=$(mktemp -d)
trap 'rm -rf "$consumer"' EXIT
cp client/examples/list-clonesets/main.go "$consumer/"
printf '%s\n' "module example.com/flotilla-consumer" "" "go 1.26.0" "" \
  "require (" "	github.com/flotilla-dev/flotilla/apis v0.0.0" "	github.com/flotilla-dev/flotilla/client v0.0.0" ")" "" \
  "replace (" "	github.com/flotilla-dev/flotilla/apis => $ROOT/apis" "	github.com/flotilla-dev/flotilla/client => $ROOT/client" ")" \
  > "$consumer/go.mod"
if ! (cd "$consumer" && GOWORK=off go mod tidy > /dev/null && GOWORK=off go build -o /dev/null .); then
  echo "client/examples/list-clonesets does not build as an outside module"; exit 1
fi
echo "client/examples/list-clonesets builds as an outside module"

step "helm chart generated from the overlays"
(cd charts/tools && GOWORK=off go run ./cmd/genchart)
git diff --exit-code -- charts/flotilla || { echo "charts/flotilla is stale: run (cd charts/tools && GOWORK=off go run ./cmd/genchart)"; exit 1; }
test -z "$(git ls-files --others --exclude-standard charts/flotilla)" || { echo "charts/flotilla has files not committed"; exit 1; }

step "kustomize"
for o in deploy/overlays/*/; do
  kubectl kustomize "$o" > /dev/null || { echo "kustomize failed: $o"; exit 1; }
  echo "rendered $o"
done
echo "verify: ok"
