#!/usr/bin/env bash
# Usage: bench/hostile-sizes.sh cloneset|statefulset  (issue 26 item 1; bench/RESULTS.md "Hostile sizes")
# Builds the controller binary, runs it against the local control plane scoped to a fresh namespace
# with a 100,000-replica workload (pods held by a scheduling gate, counted by a 1,000-pod NotBestEffort
# ResourceQuota) plus a 3-replica one, and prints its RSS (idle, peak = VmHWM, 20 s later).
set -euo pipefail
kind=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
kubeconfig="${FLOTILLA_KUBECONFIG:-$root/.cluster/kubeconfig}"
K="kubectl --kubeconfig $kubeconfig"
bin="$(mktemp -d)"
(cd "$root" && go build -o "$bin/" ./controllers/$kind/cmd/$kind-controller)
ns=bench26-$kind
$K delete ns $ns --ignore-not-found --wait=true >/dev/null
$K create ns $ns >/dev/null
cat <<Q | $K -n $ns apply -f - >/dev/null
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods}
spec:
  hard: {pods: "1000"}
  scopes: [NotBestEffort]
Q
until [ -n "$($K -n $ns get resourcequota pods -o jsonpath='{.status.hard.pods}')" ]; do sleep 0.2; done
"$bin/$kind-controller" --kubeconfig "$kubeconfig" --namespace $ns --leader-elect=false \
  --metrics-bind-address 0 --health-probe-bind-address 0 --disable-initial-list-delay >"$bin/$kind.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 3
idle=$(grep VmRSS /proc/$pid/status | awk '{print $2}')
if [ $kind = cloneset ]; then
  api=apps.kruise.io/v1alpha1; k=CloneSet; extra=""
else
  api=apps.kruise.io/v1beta1; k=StatefulSet
  extra="  podManagementPolicy: Parallel
  serviceName: svc-huge
  reserveOrdinals: [$(for i in $(seq 0 999); do lo=$((i*200+1)); printf '"%d-%d",' $lo $((lo+99)); done | sed 's/,$//')]"
fi
start=$(date +%s.%N)
cat <<Y | $K -n $ns apply -f - >/dev/null
apiVersion: $api
kind: $k
metadata: {name: huge}
spec:
  replicas: 100000
$extra
  selector: {matchLabels: {app: huge}}
  template:
    metadata: {labels: {app: huge}}
    spec:
      schedulingGates: [{name: flotilla.dev/hold}]
      containers: [{name: main, image: registry.local/app:v1, resources: {requests: {cpu: 1m}}}]
---
apiVersion: $api
kind: $k
metadata: {name: small}
spec:
  replicas: 3
$( [ $kind = statefulset ] && printf '  podManagementPolicy: Parallel\n  serviceName: svc-small' )
  selector: {matchLabels: {app: small}}
  template:
    metadata: {labels: {app: small}}
    spec:
      containers: [{name: main, image: registry.local/app:v1}]
Y
small=""
for i in $(seq 1 600); do
  r=$($K -n $ns get $k.${api%/*} small -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true)
  if [ -z "$small" ] && [ "$r" = 3 ]; then small=$(echo "$(date +%s.%N) - $start" | bc); fi
  n=$($K -n $ns get pods -l app=huge --no-headers 2>/dev/null | wc -l)
  [ -n "$small" ] && [ "$n" -ge 1000 ] && break
  sleep 0.1
done
sleep 20  # keep syncing (quota errors, back-off) and sample the steady state too
hwm=$(grep VmHWM /proc/$pid/status | awk '{print $2}')
rss=$(grep VmRSS /proc/$pid/status | awk '{print $2}')
n=$($K -n $ns get pods -l app=huge --no-headers | wc -l)
echo "$kind: idle RSS $((idle/1024)) MiB; peak RSS (VmHWM) $((hwm/1024)) MiB; RSS after 20 s more $((rss/1024)) MiB; huge: $n pods (quota 1000); small: 3 Ready after ${small:-never} s"
kill $pid; wait $pid 2>/dev/null || true
$K delete ns $ns --wait=false >/dev/null
