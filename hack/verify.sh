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

step "go.mod tidy"
for m in $(modules); do
  (cd "$m" && GOWORK=off go mod tidy -diff >/dev/null) || { echo "$m: go.mod/go.sum not tidy (run: cd $m && GOWORK=off go mod tidy)"; exit 1; }
done

step "Kubernetes library versions"
hack/verify-versions.sh

step "lint"
hack/lint.sh

step "kustomize"
for o in deploy/overlays/*/; do
  kubectl kustomize "$o" > /dev/null || { echo "kustomize failed: $o"; exit 1; }
  echo "rendered $o"
done
echo "verify: ok"
