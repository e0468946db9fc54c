#!/usr/bin/env bash
# up.sh [--nodes N] — start the local control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok, local-provisioner) on 127.0.0.1, create N fake kwok nodes (default 3) and start the CRD
# conversion endpoint (local-convert.sh; also on an already running cluster, when it is not running).
#
# Idempotent: if the cluster in $CLUSTER_DIR is already up and healthy it says so and exits 0;
# a half-dead cluster is stopped (down.sh) and started afresh. etcd starts from an empty data dir
# every time (bootstrap takes ~2 s, so there is nothing worth keeping), unless KEEP_ETCD=1.
#
# Env (defaults in lib.sh): CLUSTER_DIR CLUSTER_BIN APISERVER_PORT ETCD_CLIENT_PORT ETCD_PEER_PORT
#   KCM_PORT SCHEDULER_PORT KWOK_PORT LOCAL_CONVERT_PORT LOCAL_CONVERT_NAMESPACE KUBE_API_QPS KUBE_API_BURST SERVICE_CIDR POD_CIDR
#   NODES            node count (same as --nodes)
#   AUDIT=1          audit log to $CLUSTER_DIR/logs/audit.log, policy level AUDIT_LEVEL (Metadata)
#   KEEP_ETCD=1      reuse the etcd data dir of the previous run
#   {ETCD,APISERVER,KCM,SCHEDULER,KWOK}_EXTRA_ARGS   extra flags (word-split)
#   READY_TIMEOUT    seconds to wait for each step (default 120)
#   KWOK_STAGES_DIR  directory of kwok Stage YAMLs (default hack/cluster/kwok)
#   KWOK_POD_PARALLELISM  kwok workers playing pod stages (default 16; kwok's own default is 4)
#   KWOK_POD_PENDING_STEP=0  leave out kwok/pod-pending.yaml (pods go Pending -> Running in one status write)
#   REAL_NODES       real nodes (kubelet + containerd) beside the kwok nodes (default 0; node-up.sh)
#   REGISTRY_PORT KUBELET_PORT   local registry / first kubelet port (defaults 5050 / 10250)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODES=${NODES:-3}
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=${2:?--nodes needs a value}; shift 2 ;;
    --nodes=*) NODES=${1#--nodes=}; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) die "unknown argument $1 (usage: up.sh [--nodes N])" ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ ]] || die "--nodes must be a number"
READY_TIMEOUT=${READY_TIMEOUT:-120}

for b in "${COMPONENTS[@]}"; do
  [ -x "$CLUSTER_BIN/$b" ] || die "$CLUSTER_BIN/$b missing: run hack/cluster/build.sh (make cluster-build)"
done
command -v kubectl >/dev/null || die "kubectl not found in PATH"

readyz() { curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -qx ok; }

# --- already up? ------------------------------------------------------------
alive=0
for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null && alive=$((alive + 1)); done
if [ "$alive" = "${#COMPONENTS[@]}" ] && [ -f "$PKI/ca.crt" ] && readyz; then
  log "already up and healthy ($CLUSTER_DIR, https://127.0.0.1:$APISERVER_PORT); KUBECONFIG=$CLUSTER_DIR/kubeconfig"
  # Real nodes join a running control plane too (make run, then make test with REAL_NODES=1).
  "$CLUSTER_HACK/node-up.sh"
  # The CRD conversion endpoint too (started when missing, e.g. on a cluster from before it existed).
  "$CLUSTER_HACK/local-convert.sh"
  exit 0
fi
if [ "$alive" -gt 0 ]; then
  log "cluster in $CLUSTER_DIR is only partly running ($alive/${#COMPONENTS[@]} processes): restarting it"
  "$CLUSTER_HACK/down.sh"
fi

# --- ports free? ------------------------------------------------------------
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in APISERVER_PORT ETCD_CLIENT_PORT ETCD_PEER_PORT KCM_PORT SCHEDULER_PORT KWOK_PORT; do
  ! port_busy "${!p}" || die "port ${!p} ($p) is in use; stop whatever listens there or set $p"
done

T0=$(now)
mkdir -p "$LOGS" "$RUN" "$DATA"
for c in "${COMPONENTS[@]}"; do [ -f "$LOGS/$c.log" ] && mv -f "$LOGS/$c.log" "$LOGS/$c.log.prev"; done
"$CLUSTER_HACK/pki.sh"

# start NAME ARGS...: run $CLUSTER_BIN/NAME detached (own session: survives the caller's
# terminal/process group), log to logs/NAME.log, pid to run/NAME.pid. The pid is written by the
# shell that then execs the binary, so it is exactly the binary's pid.
start() {
  local name=$1; shift
  # shellcheck disable=SC2016  # $$ and $@ are expanded by the inner bash
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$RUN/$name.pid" "$CLUSTER_BIN/$name" "$@" \
    > "$LOGS/$name.log" 2>&1 < /dev/null &
  local i
  for i in $(seq 100); do [ -s "$RUN/$name.pid" ] && break; sleep 0.01; done
}
fail() { # fail NAME MSG: show the end of the component's log, stop everything, exit 1
  echo "[cluster] ERROR: $2; last lines of $LOGS/$1.log:" >&2
  tail -n 30 "$LOGS/$1.log" >&2 || true
  "$CLUSTER_HACK/down.sh" >&2 || true
  exit 1
}

# --- etcd ---------------------------------------------------------------------
# Built from the module proxy (v3.7.0): Debian's etcd 3.4 lacks RequestWatchProgress and every
# apiserver watch fails with it. --unsafe-no-fsync: a throwaway test cluster does not need
# durability, and fsync is the main etcd cost on this VM.
[ "${KEEP_ETCD:-}" = 1 ] || rm -rf "$DATA/etcd"
rm -rf "$DATA/volumes"   # hostPath volumes of the previous run's PVs (their PVs are gone with etcd)
mkdir -p "$DATA/volumes"
ETCD_URL=http://127.0.0.1:$ETCD_CLIENT_PORT
# shellcheck disable=SC2086
start etcd --name flotilla --data-dir "$DATA/etcd" \
  --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "flotilla=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync=true --log-level=warn ${ETCD_EXTRA_ARGS:-}
wait_for "$READY_TIMEOUT" etcd curl -sf --max-time 2 "$ETCD_URL/health" || fail etcd "etcd not healthy"
log "etcd healthy after $(since "$T0") s"

# --- kube-apiserver -------------------------------------------------------------
AUDIT_ARGS=()
if [ "${AUDIT:-}" = 1 ]; then
  cat > "$CLUSTER_DIR/audit-policy.yaml" <<EOA
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: ${AUDIT_LEVEL:-Metadata}
EOA
  # The log backend in the default "blocking" mode writes every event synchronously, in order.
  AUDIT_ARGS=(--audit-policy-file="$CLUSTER_DIR/audit-policy.yaml" --audit-log-path="$LOGS/audit.log"
              --audit-log-format=json --audit-log-maxsize=0 --audit-log-maxbackup=0)
  : > "$LOGS/audit.log"
fi
# Admission webhooks: the API server presents the client certificate webhook-client (pki.sh) to every
# webhook ('*': Services and URLs alike), so a webhook can refuse callers that are not the API server
# (kit/webhook --webhook-client-ca=$PKI/webhook-client-ca.crt --webhook-client-names=kube-apiserver-webhook-client;
# hack/run-local.sh passes them when $CLUSTER_DIR/admission/config.yaml exists). A webhook that does not ask
# for a client certificate never receives it.
mkdir -p "$CLUSTER_DIR/admission"
cat > "$CLUSTER_DIR/admission/webhook-client.kubeconfig" <<EOK
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: $PKI/webhook-client.crt
    client-key: $PKI/webhook-client.key
EOK
cat > "$CLUSTER_DIR/admission/config.yaml" <<EOA
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $CLUSTER_DIR/admission/webhook-client.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $CLUSTER_DIR/admission/webhook-client.kubeconfig
EOA
T1=$(now)
# --endpoint-reconciler-type=none: the "kubernetes" Service would otherwise point at 127.0.0.1,
#   which means nothing inside pods. Pods on a real node reach the API server at the Service's IP all the
#   same: node-up.sh routes the service range to the node's bridge and DNATs <first service IP>:443 to
#   127.0.0.1:$APISERVER_PORT there (what kube-proxy would do for this one Service; there is no kube-proxy).
# --enable-aggregator-routing: the API server calls a webhook Service (and an aggregated API) at the
#   Service's endpoints, the pods' IPs, which this host reaches on a real node's bridge, instead of the
#   Service's cluster IP, which nothing here routes (no kube-proxy).
# --authorization-mode=Node,RBAC as in a real cluster; admission webhooks by URL work by default.
# --kubelet-preferred-address-types: kubectl logs/exec reach a real node's kubelet at its InternalIP (the
#   default tries the node name first, which no resolver here knows).
# shellcheck disable=SC2086
start kube-apiserver \
  --etcd-servers="$ETCD_URL" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --admission-control-config-file="$CLUSTER_DIR/admission/config.yaml" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --authorization-mode=Node,RBAC \
  --endpoint-reconciler-type=none --enable-aggregator-routing=true \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --allow-privileged=true \
  --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
  "${AUDIT_ARGS[@]}" ${APISERVER_EXTRA_ARGS:-}
wait_for "$READY_TIMEOUT" kube-apiserver readyz || fail kube-apiserver "kube-apiserver not ready"
log "kube-apiserver ready $(since "$T1") s after start"

# --- kube-controller-manager, kube-scheduler -------------------------------------
# Leader election off: single instance, and it saves ~2 s of lease acquisition at start.
# shellcheck disable=SC2086
start kube-controller-manager \
  --kubeconfig="$PKI/kcm.kubeconfig" \
  --authentication-kubeconfig="$PKI/kcm.kubeconfig" --authorization-kubeconfig="$PKI/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=true \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --leader-elect=false --kube-api-qps="$KUBE_API_QPS" --kube-api-burst="$KUBE_API_BURST" \
  ${KCM_EXTRA_ARGS:-}
# --kube-api-qps/burst are deprecated for the scheduler but honoured when no --config is given.
# shellcheck disable=SC2086
start kube-scheduler \
  --kubeconfig="$PKI/scheduler.kubeconfig" \
  --authentication-kubeconfig="$PKI/scheduler.kubeconfig" --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
  --leader-elect=false --kube-api-qps="$KUBE_API_QPS" --kube-api-burst="$KUBE_API_BURST" \
  ${SCHEDULER_EXTRA_ARGS:-}

# RBAC of kwok and the provisioner, FlowSchema, default StorageClass (while kcm/scheduler start).
kc apply -f "$CLUSTER_HACK/manifests/bootstrap.yaml" > "$LOGS/bootstrap.log" 2>&1 || fail bootstrap "applying manifests/bootstrap.yaml failed"
# Flotilla's controllers at kube-controller-manager's API priority level (deploy/extras/flowschema.yaml).
kc apply -f "$CLUSTER_HACK/../../deploy/extras/flowschema.yaml" >> "$LOGS/bootstrap.log" 2>&1 || fail bootstrap "applying deploy/extras/flowschema.yaml failed"

# --- kwok -------------------------------------------------------------------------
# Config mode: the stages are hack/cluster/kwok/*.yaml (see README), after one KwokConfiguration
# document. kwok applies no defaults to a KwokConfiguration read from a file (a partial one dies with
# "node leases parallelism must be greater than 0"), so every option with a default is spelled out.
# podPlayStageParallelism: kwok plays every pod's stages with this many workers for ALL its nodes, where
# a cluster has one kubelet per node; at kwok's default of 4 the simulated kubelets, not the workload
# controllers, set the pace of a scale-up (~130 status patches/s here), and most of all for pods with
# readiness gates, which need a second kubelet status write (bench/RESULTS.md).
KWOK_STAGES_DIR=${KWOK_STAGES_DIR:-$CLUSTER_HACK/kwok}
KWOK_POD_PARALLELISM=${KWOK_POD_PARALLELISM:-16}
# pod-pending.yaml is the kubelet's Pending status before Running: a second status write per pod. The bench
# leaves it out (KWOK_POD_PENDING_STEP=0) so that its figures compare with runs made before it existed.
KWOK_POD_PENDING_STEP=${KWOK_POD_PENDING_STEP:-1}
{
  cat <<EOC
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: "$POD_CIDR"
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: $KWOK_POD_PARALLELISM
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
EOC
  for f in "$KWOK_STAGES_DIR"/*.yaml; do
    [ "$KWOK_POD_PENDING_STEP" = 0 ] && [ "$(basename "$f")" = pod-pending.yaml ] && continue
    echo "---"; cat "$f"; echo
  done
} > "$CLUSTER_DIR/kwok.yaml"
# A new kwok process has a new lease-holder identity and ignores nodes whose Lease is still held
# by the previous one (up to --node-lease-duration-seconds). Leases only survive with KEEP_ETCD=1,
# but delete them unconditionally: it is cheap and makes restarts gap-free.
kc delete lease -n kube-node-lease --all --wait=false > /dev/null 2>&1 || true
# shellcheck disable=SC2086
start kwok \
  --kubeconfig="$PKI/kwok.kubeconfig" --config="$CLUSTER_DIR/kwok.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-lease-duration-seconds=40 --cidr="$POD_CIDR" --node-ip=10.0.0.1 \
  --server-address="127.0.0.1:$KWOK_PORT" \
  ${KWOK_EXTRA_ARGS:-}

# --- local PV provisioner ---------------------------------------------------------------
start local-provisioner \
  --kubeconfig="$PKI/provisioner.kubeconfig" --volume-dir="$DATA/volumes"

# --- nodes ---------------------------------------------------------------------------------
nodes_yaml() {
  local i
  for ((i = 0; i < NODES; i++)); do cat <<EON
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: zone-$((i % 3))
status:
  # An address of its own per node (kwok's --node-ip is only the fallback), so a pod's hostIP says which node it
  # is on, as with kubelets.
  addresses:
  - {type: InternalIP, address: 10.0.$((i / 254)).$((i % 254 + 1))}
  - {type: Hostname, address: kwok-node-$i}
  allocatable: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
  capacity: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
EON
  done
}
if [ "$NODES" -gt 0 ]; then
  nodes_yaml | kc apply -f - > "$LOGS/nodes.log" 2>&1 || fail nodes "creating nodes failed"
fi

# --- wait until usable ------------------------------------------------------------------------
healthz() { curl -sfk --max-time 2 "https://127.0.0.1:$1/healthz" | grep -qx ok; }
wait_for "$READY_TIMEOUT" kube-controller-manager healthz "$KCM_PORT" || fail kube-controller-manager "kube-controller-manager not healthy"
wait_for "$READY_TIMEOUT" kube-scheduler healthz "$SCHEDULER_PORT" || fail kube-scheduler "kube-scheduler not healthy"
log "kube-controller-manager and kube-scheduler healthy after $(since "$T0") s"
if [ "$NODES" -gt 0 ]; then
  kc wait --for=condition=Ready node -l type=kwok --timeout="${READY_TIMEOUT}s" > /dev/null || fail kwok "nodes not Ready"
  log "$NODES nodes Ready after $(since "$T0") s"
fi
wait_for "$READY_TIMEOUT" "default ServiceAccount" kc get serviceaccount default -n default ||
  fail kube-controller-manager "ServiceAccount default/default not created"
for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || fail "$c" "$c exited"; done

"$CLUSTER_HACK/local-convert.sh" || fail local-convert "the CRD conversion endpoint did not start"
"$CLUSTER_HACK/node-up.sh" || fail kubelet-0 "real nodes did not start (logs/kubelet-*.log, logs/containerd-*.log)"
log "ready in $(since "$T0") s: $NODES kwok nodes, $REAL_NODES real nodes, https://127.0.0.1:$APISERVER_PORT"
log "export KUBECONFIG=$CLUSTER_DIR/kubeconfig"
