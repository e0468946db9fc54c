#!/usr/bin/env bash
# `make run`: on the local control plane (hack/cluster/up.sh), install namespace + CRDs + RBAC from
# deploy/overlays/local, start all the controllers as local processes, each under its own ServiceAccount
# (so the RBAC in deploy/ is what they really run with), wait until each is healthy, ready and holds its
# Lease, then apply the samples. `--stop` stops the controllers again. Logs: $CLUSTER_DIR/logs/<name>.log.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/.cluster}
RUN=$CLUSTER_DIR/run/controllers
LOGS=$CLUSTER_DIR/logs
NS=flotilla-system
CONTROLLERS=(cloneset statefulset daemonset sidecarset pub probe cronjob deletionprotection uniteddeployment resourcedistribution containerrecreate imagepulljob launchpriority workloadspread persistentpodstate)
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
mkdir -p "$RUN" "$LOGS"

stop_all() {
  local f pid
  for f in "$RUN"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    # Only signal a process that is still the controller we started (PIDs get reused).
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qE -- "-controller |probe-agent "; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$f"
  done
}
if [ "${1:-}" = "--stop" ]; then stop_all; echo "controllers stopped"; exit 0; fi

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds or the deadline passes.
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after ${secs}s waiting for $what" >&2; return 1; fi
    sleep 0.2
  done
}

t0=$(date +%s.%N)
stop_all
kubectl apply --server-side --force-conflicts -k "$ROOT/deploy/overlays/local" > /dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s > /dev/null

# Conversion webhooks: the DaemonSet and SidecarSet CRDs store v1beta1 and convert by webhook; deploy/overlays/local
# points their stanza at flotilla-local, where the cluster's own endpoint serves it (hack/cluster/local-convert.sh,
# started by up.sh), so that it is there also when no controller runs. Its CA reaches a re-applied CRD within
# seconds: wait for it, the controllers read at v1alpha1.
CLUSTER_DIR="$CLUSTER_DIR" "$ROOT/hack/cluster/local-convert.sh"
for crd in daemonsets.apps.kruise.io sidecarsets.apps.kruise.io; do
  wait_for "the local conversion CA in CRD $crd" 30 bash -c \
    "[ \"\$(kubectl get crd $crd -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')\" = \"$(base64 -w0 < "$CLUSTER_DIR/pki/local-convert/ca.crt")\" ]"
done

server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
# Per-controller flags: the sidecarset webhook listens where deploy/overlays/local points the API server.
# With a control plane that presents its webhook client certificate (hack/cluster/up.sh writes
# admission/config.yaml), the webhooks accept that caller only.
webhook_auth=
if [ -s "$CLUSTER_DIR/admission/config.yaml" ]; then
  webhook_auth="--webhook-client-ca=$CLUSTER_DIR/pki/webhook-client-ca.crt --webhook-client-names=kube-apiserver-webhook-client"
fi
# sidecarset and daemonset also serve their CRDs' conversion, but the CRDs' stanza is the cluster's conversion
# endpoint's (above): --webhook-external-crd-conversion, so that they never re-point it at themselves.
extra_args() { case $1 in sidecarset) echo "--webhook-host=127.0.0.1 --webhook-port=19443 --webhook-external-crd-conversion $webhook_auth" ;;
  # KruiseDaemon for the workloads, as deploy/components/node-agent-gates in overlays/all: the agents below run on
  # the real nodes (pods on kwok nodes, which no agent records, are recreated for env-from-metadata changes).
  daemonset) echo "--webhook-host=127.0.0.1 --webhook-port=19445 --webhook-external-crd-conversion $webhook_auth --feature-gates=KruiseDaemon=true" ;;
  cloneset|statefulset) echo "--feature-gates=KruiseDaemon=true" ;;
  pub) echo "--webhook-host=127.0.0.1 --webhook-port=19444 $webhook_auth" ;;
  launchpriority) echo "--webhook-host=127.0.0.1 --webhook-port=19452 $webhook_auth" ;;
  workloadspread) echo "--webhook-host=127.0.0.1 --webhook-port=19454 $webhook_auth" ;;
  persistentpodstate) echo "--webhook-host=127.0.0.1 --webhook-port=19456 $webhook_auth" ;;
  # The deletion-protection gates, on wherever the feature is installed (deploy/components/deletionprotection-gates).
  deletionprotection) echo "--webhook-host=127.0.0.1 --webhook-port=19447 $webhook_auth --feature-gates=ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true" ;;
  # PodProbeMarkerGate needs KruiseDaemon (a node agent); the probe component ships probe-agent, so its
  # controller runs with the gate on, here as in deploy/components/probe.
  probe) echo "--feature-gates=KruiseDaemon=true" ;;
  # ResourceDistributionGate, on wherever the feature is installed (deploy/components/resourcedistribution-gates).
  resourcedistribution) echo "--feature-gates=ResourceDistributionGate=true" ;;
  # KruiseDaemon, as deploy/components/containerrecreate-gates: the agents below recreate the containers.
  containerrecreate) echo "--feature-gates=KruiseDaemon=true" ;;
  # KruiseDaemon, as deploy/components/imagepulljob-gates: the agents below pull; NodeImages at once for the real node.
  imagepulljob) echo "--feature-gates=KruiseDaemon=true --nodeimage-creation-delay=0s" ;; esac; }
# kubeconfig_for SERVICEACCOUNT [NAMESPACE [NODE]]: writes $RUN/<sa>[-<node>].kubeconfig with a token of that
# ServiceAccount (in NAMESPACE, default $NS; bound to Node NODE if given); prints its path.
kubeconfig_for() {
  local name=$1 ns=${2:-$NS} node=${3:-} token kc=$RUN/$1${3:+-$3}.kubeconfig
  if [ -n "$node" ]; then
    # A token bound to the node carries it (user extra authentication.kubernetes.io/node-name), which the
    # ValidatingAdmissionPolicy flotilla-probe-agent-own-node requires: an agent writes only its node's results.
    token=$(kubectl -n "$ns" create token "$name" --duration=24h --bound-object-kind=Node --bound-object-name="$node")
  else
    token=$(kubectl -n "$ns" create token "$name" --duration=24h)
  fi
  cat > "$kc" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $name, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: $name}}]
current-context: local
KC
  chmod 600 "$kc"
  echo "$kc"
}
# The i-th controller listens on 127.0.0.1:$(metrics_port i) and $(health_port i); the two ranges (and the agents'
# from 18100) are 100 ports apart, so they cannot meet whatever the number of controllers.
metrics_port() { echo $((18200 + $1)); }
health_port() { echo $((18300 + $1)); }
i=0
for c in "${CONTROLLERS[@]}"; do
  name=$c-controller
  kc=$(kubeconfig_for "$name")
  setsid "$ROOT/bin/$name" --kubeconfig="$kc" \
    --metrics-bind-address=127.0.0.1:$(metrics_port $i) --health-probe-bind-address=127.0.0.1:$(health_port $i) \
    --leader-elect=true --leader-elect-resource-namespace=$NS $(extra_args "$c") \
    > "$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
  i=$((i + 1))
done

i=0
for c in "${CONTROLLERS[@]}"; do
  name=$c-controller
  wait_for "$name /healthz" 60 curl -sf "http://127.0.0.1:$(health_port $i)/healthz"
  wait_for "$name /readyz" 60 curl -sf "http://127.0.0.1:$(health_port $i)/readyz"
  wait_for "$name to hold Lease $NS/$name" 60 bash -c "kubectl -n $NS get lease $name -o jsonpath='{.spec.holderIdentity}' | grep -q ."
  i=$((i + 1))
done
t1=$(date +%s.%N)

# probe-agent: one process per real node (`make run REAL_NODES=1`), running the probes of its pods through that
# node's containerd, as the probe overlay's DaemonSet does in a cluster. The kwok nodes run no container, so no agent
# runs for them: with kwok nodes only, PodProbeMarkers are placed on NodePodProbes and nothing probes them.
agents=()
for node in $(kubectl get nodes -l flotilla.dev/real-node=true -o jsonpath='{.items[*].metadata.name}'); do
  sock=$(kubectl get node "$node" -o jsonpath='{.metadata.annotations.flotilla\.dev/cri-socket}')
  port=$((18100 + ${#agents[@]}))
  setsid "$ROOT/bin/probe-agent" --kubeconfig="$(kubeconfig_for probe-agent flotilla-node "$node")" --node-name="$node" --cri-socket="unix://$sock" --feature-gates=KruiseDaemon=true,ImagePullJobGate=true \
    --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:$port > "$LOGS/probe-agent-$node.log" 2>&1 < /dev/null &
  echo $! > "$RUN/probe-agent-$node.pid"
  wait_for "probe-agent of $node /readyz" 60 curl -sf "http://127.0.0.1:$port/readyz"
  agents+=("$node")
done

"$ROOT/hack/apply-samples.sh"
printf '%-24s %-8s %-22s %-22s %s\n' CONTROLLER PID HEALTH METRICS LEASE-HOLDER
i=0
for c in "${CONTROLLERS[@]}"; do
  name=$c-controller
  printf '%-24s %-8s %-22s %-22s %s\n' "$name" "$(cat "$RUN/$name.pid")" "127.0.0.1:$(health_port $i)" \
    "127.0.0.1:$(metrics_port $i)" "$(kubectl -n $NS get lease "$name" -o jsonpath='{.spec.holderIdentity}')"
  i=$((i + 1))
done
echo "samples (deploy/samples/), each waited for until it shows its documented state:"
"$ROOT/hack/check-samples.sh"
echo "all ${#CONTROLLERS[@]} controllers healthy, ready and leading in $(awk "BEGIN{printf \"%.1f\", $t1-$t0}") s"
echo "samples applied from deploy/samples/; try: KUBECONFIG=$KUBECONFIG kubectl get clonesets,statefulsets.apps.kruise.io,daemonsets.apps.kruise.io,pods,pvc"
if [ ${#agents[@]} -gt 0 ]; then echo "probe-agent runs for the real node(s): ${agents[*]}"
else echo "probe-agent: not started (no real node: make run REAL_NODES=1 adds one; kwok nodes run no container to probe)"; fi
echo "logs: $LOGS/<name>-controller.log   stop: make stop   control plane down: make cluster-down"
