#!/usr/bin/env bash
# Applies deploy/samples/ to the cluster of $KUBECONFIG in two steps: everything but the workloads labelled
# flotilla.dev/sample=after-sidecarset, then — once a server-side dry-run create of a pod like theirs shows the
# sidecars injected — those too. A SidecarSet injects only into pods created after sidecarset-controller has put it
# in its webhook's scope; the sample Deployment's pods, created in the same kubectl apply, would race it.
# Used by `make run` and test/e2e/install; prints nothing on success.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export KUBECONFIG=${KUBECONFIG:-${CLUSTER_DIR:-$ROOT/.cluster}/kubeconfig}
samples=$ROOT/deploy/samples
# The launch-priority sample's pod must be created through launchpriority-controller's webhook (the local overlay's
# failurePolicy is Ignore): wait until a dry-run create of an Ordered pod shows the barrier env.
lp_probe='{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "launch-priority-probe-", "namespace": "default",
  "annotations": {"apps.kruise.io/container-launch-priority": "Ordered"}}, "spec": {"containers": [{"name": "a", "image": "registry.example/sample:v1"},
  {"name": "b", "image": "registry.example/sample:v1"}]}}'
deadline=$((SECONDS + 60))
until kubectl create --dry-run=server -o 'jsonpath={.spec.containers[*].env[*].name}' -f - <<<"$lp_probe" 2>/dev/null | grep -qw KRUISE_CONTAINER_BARRIER; do
  if [ $SECONDS -ge $deadline ]; then
    echo "apply-samples: the launch-priority webhook injects nothing after 60 s (is launchpriority-controller running?)" >&2
    exit 1
  fi
  sleep 0.2
done
kubectl apply -f "$samples" -l 'flotilla.dev/sample notin (after-sidecarset,after-pod)' > /dev/null
probe='{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "sidecar-sample-", "namespace": "default",
  "labels": {"app": "sidecar-sample"}}, "spec": {"containers": [{"name": "main", "image": "registry.example/sample:v1"}]}}'
deadline=$((SECONDS + 60))
until kubectl create --dry-run=server -o 'jsonpath={.spec.containers[*].name}' -f - <<<"$probe" 2>/dev/null | grep -qw log-agent; do
  if [ $SECONDS -ge $deadline ]; then
    echo "apply-samples: the SidecarSet sample injects nothing after 60 s (is sidecarset-controller running?)" >&2
    exit 1
  fi
  sleep 0.2
done
# The WorkloadSpread sample's Deployment is in the second step too: its pods are placed only once the
# WorkloadSpread is in its webhook's scope (condition WebhookInScope, written by workloadspread-controller).
kubectl wait --for=condition=WebhookInScope --timeout=60s workloadspreads.apps.kruise.io/sample > /dev/null
kubectl apply -f "$samples" -l 'flotilla.dev/sample!=after-pod' > /dev/null
# The ContainerRecreateRequest sample names a pod that must be running first (with a real node; without one the pod
# stays Pending and the request completes saying so).
if [ -n "$(kubectl get nodes -l flotilla.dev/real-node=true -o name)" ]; then
  kubectl -n default wait --for=condition=Ready --timeout=120s pod/crr-sample > /dev/null
fi
# A ContainerRecreateRequest is a one-shot request: the controller fills in its containers (containerID, preStop), so
# it is created once and never re-applied (kubectl apply would replace that list, which the API refuses: immutable).
if ! out=$(kubectl create -f "$samples" -l 'flotilla.dev/sample=after-pod' 2>&1); then
  grep -q AlreadyExists <<<"$out" || { echo "$out" >&2; exit 1; }
fi
