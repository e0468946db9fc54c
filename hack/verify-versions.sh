#!/usr/bin/env bash
# Every module must build against the same Kubernetes libraries: each staging module (k8s.io/api, client-go,
# ...) that a module uses must resolve to K8S_VERSION when the module is built on its own (GOWORK=off), and
# code-generator must equal client-go's version.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
K8S_VERSION=${K8S_VERSION:-v0.37.1}
staging='^k8s\.io/(api|apimachinery|client-go|apiextensions-apiserver|apiserver|component-base|code-generator|component-helpers|kube-aggregator|metrics|cli-runtime|kubectl|kms|externaljwt|controller-manager|cloud-provider|csi-translation-lib|dynamic-resource-allocation|endpointslice|kube-controller-manager|kube-proxy|kube-scheduler|kubelet|mount-utils|pod-security-admission|sample-apiserver|cri-api|cri-client|cri-streaming|streaming|sample-controller|sample-cli-plugin) '
fail=0
for m in $(modules) $(standalone_modules); do
  while read -r path version; do
    if [ "$version" != "$K8S_VERSION" ]; then
      echo "$m: $path is $version, want $K8S_VERSION"; fail=1
    fi
  done < <(cd "$ROOT/$m" && GOWORK=off go list -m all 2>/dev/null | grep -E "$staging" | awk '{print $1, $NF}' || true)
done
# The control-plane wrapper pins the same libraries through its replace block.
if [ -f "$ROOT/hack/cluster/wrapper/go.mod" ]; then
  bad=$(grep -E "^\s+k8s\.io/[a-z-]+ => k8s\.io/[a-z-]+ v0\." "$ROOT/hack/cluster/wrapper/go.mod" | grep -v " $K8S_VERSION$" || true)
  if [ -n "$bad" ]; then echo "hack/cluster/wrapper: staging replaces not at $K8S_VERSION:"; echo "$bad"; fail=1; fi
fi
cg=$(cd "$ROOT/hack/tools" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/code-generator)
cgo=$(cd "$ROOT/client" && GOWORK=off go list -m -f '{{.Version}}' k8s.io/client-go)
if [ "$cg" != "$cgo" ]; then echo "code-generator $cg != client-go $cgo"; fail=1; fi
[ $fail = 0 ] && echo "versions: every module pins k8s.io staging libraries at $K8S_VERSION"
exit $fail
