# lib.sh — shared settings of the local control plane scripts (sourced, not executed).
# Every setting is an environment variable with a default, so a test binary can start a
# private cluster on free ports in a temp dir (kit/testenv does exactly that).
# shellcheck shell=bash disable=SC2034  # variables are used by the scripts sourcing this file

CLUSTER_HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CLUSTER_HACK/../.." && pwd)

CLUSTER_DIR=${CLUSTER_DIR:-$REPO_ROOT/.cluster}      # pki/ data/ logs/ run/ kubeconfig
CLUSTER_BIN=${CLUSTER_BIN:-$REPO_ROOT/bin/cluster}   # binaries from build.sh

APISERVER_PORT=${APISERVER_PORT:-6443}
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
KCM_PORT=${KCM_PORT:-10257}
SCHEDULER_PORT=${SCHEDULER_PORT:-10259}
KWOK_PORT=${KWOK_PORT:-10247}
# The CRD conversion endpoint (local-convert.sh) listens on this host's non-loopback address at this port.
LOCAL_CONVERT_PORT=${LOCAL_CONVERT_PORT:-19446}
LOCAL_CONVERT_NAMESPACE=${LOCAL_CONVERT_NAMESPACE:-flotilla-local}

# Client-side rate limits of kcm and scheduler. The upstream defaults (20/30 and 50/100) make a
# 1000-replica workload take ~50 s instead of ~6 s on this kind of machine.
KUBE_API_QPS=${KUBE_API_QPS:-1000}
KUBE_API_BURST=${KUBE_API_BURST:-2000}

SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}   # first IP 10.96.0.1 is in the apiserver cert
POD_CIDR=${POD_CIDR:-10.244.0.0/16}          # kwok hands out pod IPs from here

PKI=$CLUSTER_DIR/pki
LOGS=$CLUSTER_DIR/logs
RUN=$CLUSTER_DIR/run
DATA=$CLUSTER_DIR/data

# Processes in start order; down.sh stops them in reverse order.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok local-provisioner)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }
log() { echo "[cluster] $*"; }
die() { echo "[cluster] ERROR: $*" >&2; exit 1; }

# pid_of NAME -> prints the pid from run/NAME.pid if that process is alive AND is still the
# binary we started (guards against pid reuse after a reboot or a crash).
pid_of() { pid_is "$RUN/$1.pid" "$CLUSTER_BIN/$1"; }

# wait_for SECONDS WHAT CMD...: poll CMD every 50 ms until it succeeds. If WHAT is a component
# with a pid file, give up as soon as that process has exited (no 2-minute wait on a bad flag).
wait_for() {
  local timeout=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if [ -f "$RUN/$what.pid" ] && ! pid_of "$what" >/dev/null; then echo "[cluster] $what exited" >&2; return 1; fi
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "[cluster] timed out after ${timeout}s waiting for $what" >&2; return 1; fi
    sleep 0.05
  done
}

# host_address: this host's first non-loopback IPv4 address (a Service endpoint may not be 127.0.0.1).
host_address() {
  local ip
  ip=$(hostname -I 2>/dev/null | awk '{print $1}')
  [ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
  echo "$ip"
}

kc() { kubectl --kubeconfig "$CLUSTER_DIR/kubeconfig" "$@"; }

# --- real nodes (REAL_NODES>0; node-up.sh / node-down.sh, README "Real nodes") ---
REAL_NODES=${REAL_NODES:-0}
REGISTRY_PORT=${REGISTRY_PORT:-5050}         # local registry (plain http on 127.0.0.1)
KUBELET_PORT=${KUBELET_PORT:-10250}          # real node i: kubelet API KUBELET_PORT+2i, healthz KUBELET_PORT+2i+1
# NODE_ID names everything of this cluster's real nodes that lives outside $CLUSTER_DIR (bridge, cgroups),
# so two clusters on one machine never share them, and down.sh deletes only its own.
NODE_ID=$(printf '%s' "$CLUSTER_DIR" | sha256sum | cut -c1-8)
# Pod range of real node i: 10.89.<first byte of NODE_ID + i>.0/24 unless REAL_NODE_CIDR_PREFIX says "10.89".
REAL_NODE_CIDR_PREFIX=${REAL_NODE_CIDR_PREFIX:-10.89}
NODEDIR=$DATA/nodes
REGISTRY=127.0.0.1:$REGISTRY_PORT
real_node_name() { echo "real-node-$1"; }
real_node_cgroup() { echo "flotilla-$NODE_ID-$1"; }
real_node_bridge() { echo "flt$NODE_ID$1"; }   # <= 15 chars (IFNAMSIZ)
real_node_subnet() { echo "$REAL_NODE_CIDR_PREFIX.$(( (0x${NODE_ID:0:2} + $1) % 256 )).0/24"; }
# pid_is FILE BINARY -> prints the pid in FILE if that process is alive and runs BINARY.
pid_is() {
  local pid exe
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  # a rebuilt binary shows up as "<path> (deleted)"
  [ "${exe% (deleted)}" = "$2" ] || return 1
  echo "$pid"
}

# apiserver_route BRIDGE -A|-D: adds (-A) or deletes (-D) the one service route a real node's pods have: TCP to the
# API server's Service (the first IP of SERVICE_CIDR, port 443) is DNATed to the API server on
# 127.0.0.1:APISERVER_PORT, when it arrives on BRIDGE (pods) and when this host sends it (host-network pods such as
# the probe agent, which share the host's stack: without the rule their packets would follow the default route
# off the machine). A DNAT to loopback needs route_localnet on the bridge (as kube-proxy sets for NodePorts on
# localhost). The rules carry the bridge's name as comment, so node-down.sh finds them.
apiserver_route() {
  local br=$1 op=$2 svc=${SERVICE_CIDR%.*/*}.1
  [ "$op" = -D ] || echo 1 > "/proc/sys/net/ipv4/conf/$br/route_localnet"
  iptables -w -t nat "$op" PREROUTING -i "$br" -d "$svc/32" -p tcp --dport 443 \
    -m comment --comment "flotilla $br: API server Service" -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT" &&
  iptables -w -t nat "$op" OUTPUT -d "$svc/32" -p tcp --dport 443 \
    -m comment --comment "flotilla $br: API server Service" -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
}
