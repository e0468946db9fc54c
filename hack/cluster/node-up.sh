#!/usr/bin/env bash
# node-up.sh — start the local registry and REAL_NODES real nodes (containerd + kubelet each) beside the
# kwok nodes of a running control plane (called by up.sh when REAL_NODES>0; idempotent).
#
# Real node i (name real-node-<i>) is two processes, containerd-<i> and kubelet-<i>, with everything under
# $CLUSTER_DIR/data/nodes/<i> (containerd root/state/socket, kubelet root dir, pod logs, CNI config), and:
#   * its own mount namespace (unshare, propagation slave): the mounts of containers, volumes and pod
#     network namespaces never reach the host and vanish with the last process of the node; host-wide paths
#     containerd/CNI/kubelet insist on (/run/containerd, /var/lib/cni, /var/log/containers) get a private
#     tmpfs in there;
#   * its own cgroup tree /flotilla-<NODE_ID>-<i> in every hierarchy (kubelet's cgroupRoot; containerd and its
#     shims in .../runtime), which is how node-down.sh finds every process of the node;
#   * its own CNI bridge flt<NODE_ID><i> (bridge + host-local on real_node_subnet, no masquerade: no iptables);
#   * the label flotilla.dev/real-node=true and the taint flotilla.dev/real-node=true:NoSchedule, so only pods
#     that ask for a real node land there.
# Host sysctls the kubelet or the bridge plugin would rewrite (kubelet's kernel tunables, ip_forward) are
# shadowed inside the node's mount namespace by read-only files holding the value they want: the machine is
# shared and its settings are not ours to change (README "Real nodes").
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
READY_TIMEOUT=${READY_TIMEOUT:-120}
[[ "$REAL_NODES" =~ ^[0-9]+$ ]] && [ "$REAL_NODES" -gt 0 ] || exit 0
[ "$(id -u)" = 0 ] || die "real nodes need root (mounts, cgroups, network namespaces)"
"$CLUSTER_HACK/node-deps.sh"
for b in kubelet containerd containerd-shim-runc-v2 registry; do
  [ -x "$CLUSTER_BIN/$b" ] || die "$CLUSTER_BIN/$b missing: run REAL_NODES=1 hack/cluster/build.sh"
done
T0=$(now)
mkdir -p "$NODEDIR" "$LOGS" "$RUN"

# --- registry (one per cluster) -----------------------------------------------------------
if ! pid_is "$RUN/registry.pid" "$CLUSTER_BIN/registry" > /dev/null; then
  (exec 3<>"/dev/tcp/127.0.0.1/$REGISTRY_PORT") 2>/dev/null && die "port $REGISTRY_PORT (REGISTRY_PORT) is in use"
  mkdir -p "$DATA/registry"
  cat > "$CLUSTER_DIR/registry.yaml" <<EOR
version: 0.1
log: {level: warn, formatter: text}
storage:
  filesystem: {rootdirectory: $DATA/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY
  secret: flotilla-local-registry
EOR
  [ -f "$LOGS/registry.log" ] && mv -f "$LOGS/registry.log" "$LOGS/registry.log.prev"
  # OTEL_TRACES_EXPORTER=none: distribution exports traces to localhost:4318 by default.
  # shellcheck disable=SC2016
  OTEL_TRACES_EXPORTER=none setsid bash -c 'echo $$ > "$0"; exec "$@"' "$RUN/registry.pid" \
    "$CLUSTER_BIN/registry" "$CLUSTER_DIR/registry.yaml" > "$LOGS/registry.log" 2>&1 < /dev/null &
  wait_for "$READY_TIMEOUT" registry curl -sf --max-time 2 "http://$REGISTRY/v2/" || { tail "$LOGS/registry.log" >&2; die "registry not up"; }
  log "registry up on $REGISTRY"
fi
"$CLUSTER_HACK/images.sh"

# --- per node ------------------------------------------------------------------------------
# cgroup v1 (or hybrid) needs failCgroupV1: false since kubelet 1.35; pure cgroup v2 does not.
# CAP_SYS_RESOURCE (bit 24) missing from the bounding set: see restrict_oom_score_adj below.
RESTRICT_OOM=false
(( (0x$(awk '/^CapBnd/{print $2}' /proc/self/status) >> 24) & 1 )) || RESTRICT_OOM=true
FAIL_CGROUP_V1=true
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || FAIL_CGROUP_V1=false
# Kernel tunables kubelet's container manager sets when they differ (protectKernelDefaults=false), plus
# ip_forward, which the bridge plugin turns on for a gateway bridge. Shadowed, never written (see header).
SHADOW=(vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
        kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000 net/ipv4/ip_forward=1)

# alive_and PIDFILE BINARY CMD...: CMD succeeds, failing hard (exit 2: wait_for gives up) once the process died.
alive_and() {
  local f=$1 b=$2; shift 2
  [ -s "$f" ] || return 1
  if ! pid_is "$f" "$CLUSTER_BIN/$b" > /dev/null; then local l; l=$(basename "$f" .pid)
    echo "[cluster] $l exited; last lines of $LOGS/$l.log:" >&2; tail -n 20 "$LOGS/$l.log" >&2; exit 2
  fi
  "$@"
}

start_node() {
  local i=$1 name cg br subnet nd sock ctrd_pid kport hport
  name=$(real_node_name "$i"); cg=$(real_node_cgroup "$i"); br=$(real_node_bridge "$i"); subnet=$(real_node_subnet "$i")
  nd=$NODEDIR/$i; sock=$nd/containerd.sock
  kport=$((KUBELET_PORT + 2 * i)); hport=$((KUBELET_PORT + 2 * i + 1))
  if pid_is "$RUN/kubelet-$i.pid" "$CLUSTER_BIN/kubelet" > /dev/null &&
     pid_is "$RUN/containerd-$i.pid" "$CLUSTER_BIN/containerd" > /dev/null; then
    log "$name already running"; return
  fi
  "$CLUSTER_HACK/node-down.sh" --node "$i" > /dev/null   # leftovers of a half-dead node
  for p in "$hport"; do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && die "port $p (KUBELET_PORT + 2*$i [+1]) is in use"
  done
  # A fresh node every time (etcd starts empty, so nothing in here matches a pod any more). Its mounts
  # lived only in its own mount namespace, which node-down.sh just emptied: refuse if the host sees any.
  if grep -qF " $nd/" /proc/self/mountinfo; then die "mounts under $nd are visible on the host: not removing it"; fi
  rm -rf "$nd"
  mkdir -p "$nd"/{containerd,kubelet,pod-logs,cni/net.d,cni/ipam,certs.d/"$REGISTRY",shadow}

  # cgroup tree: cgroupRoot of the kubelet, with containerd (and so its shims) in runtime/.
  local h
  for h in /sys/fs/cgroup/*/; do
    mkdir -p "$h$cg/runtime" "$h$cg/kubelet"
    if [ -f "$h/cpuset.cpus" ]; then   # cpuset children start empty in v1
      for d in "$h$cg" "$h$cg/runtime" "$h$cg/kubelet"; do
        cat "$h/cpuset.cpus" > "$d/cpuset.cpus"; cat "$h/cpuset.mems" > "$d/cpuset.mems"
      done
    fi
  done

  local s shadows=() key val
  for s in "${SHADOW[@]}"; do
    key=${s%=*}; val=${s#*=}
    [ "$(cat "/proc/sys/$key")" = "$val" ] && continue
    echo "$val" > "$nd/shadow/${key//\//.}"
    shadows+=("$nd/shadow/${key//\//.}:/proc/sys/$key")
  done

  # The bridge exists before the first pod: its gateway address is the node's IP (a kubelet refuses a
  # loopback node IP, and the API server reaches the kubelet there for logs and exec).
  local gw=${subnet%.0/24}.1
  # Two clusters' NODE_IDs may pick the same /24 (1 in 256): refuse rather than route one cluster's pods to the other.
  [ -z "$(ip -4 route show "$subnet")" ] || die "$subnet is already routed ($(ip -4 route show "$subnet")); set REAL_NODE_CIDR_PREFIX"
  ip link add "$br" type bridge
  ip addr add "$gw/24" dev "$br"
  ip link set "$br" up
  apiserver_route "$br" -A
  # Pods route the service range to the bridge (the host), where apiserver_route catches the API server's
  # Service; nothing else of that range answers (no kube-proxy).
  cat > "$nd/cni/net.d/10-flotilla.conflist" <<EOC
{"cniVersion": "1.0.0", "name": "flotilla-$NODE_ID-$i", "plugins": [
  {"type": "bridge", "bridge": "$br", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]], "routes": [{"dst": "$SERVICE_CIDR"}],
            "dataDir": "$nd/cni/ipam"}}]}
EOC
  cat > "$nd/certs.d/$REGISTRY/hosts.toml" <<EOH
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOH
  cat > "$nd/containerd.toml" <<EOT
version = 3
root = "$nd/containerd/root"
state = "$nd/containerd/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$nd/containerd/opt"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$REGISTRY/flotilla/pause:1"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$nd/certs.d"
[plugins.'io.containerd.cri.v1.runtime']
  netns_mounts_under_state_dir = true
  # This sandbox drops CAP_SYS_RESOURCE from every process (CapBnd lacks bit 24), so no process may lower an
  # oom_score_adj below its own: runc dies with "failed to update /proc/self/oom_score_adj: Permission
  # denied" for the pod sandbox (-998) and Guaranteed containers (-997). Clamp to containerd's own (0).
  restrict_oom_score_adj = $RESTRICT_OOM
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$nd/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "${RUNC:-$(command -v runc)}"
      SystemdCgroup = false
EOT
  local c
  for c in containerd kubelet; do [ -f "$LOGS/$c-$i.log" ] && mv -f "$LOGS/$c-$i.log" "$LOGS/$c-$i.log.prev"; done
  rm -f "$RUN/containerd-$i.pid" "$RUN/kubelet-$i.pid"
  # containerd: new mount namespace; joins its cgroups, mounts the private tmpfs and the shadows, then execs.
  # shellcheck disable=SC2016
  PATH=$CLUSTER_BIN:$PATH setsid unshare --mount --propagation slave bash -c '
    set -e; pidf=$1 cg=$2; shift 2
    for h in /sys/fs/cgroup/*/; do echo $$ > "$h$cg/runtime/cgroup.procs"; done
    for d in /run/containerd /var/lib/cni /var/log/containers; do mkdir -p "$d"; mount -t tmpfs -o mode=0755 tmpfs "$d"; done
    while [ "$1" != -- ]; do mount --bind "${1%%:*}" "${1#*:}"; mount -o remount,bind,ro "${1#*:}"; shift; done; shift
    echo $$ > "$pidf"; exec "$@"' node "$RUN/containerd-$i.pid" "$cg" "${shadows[@]}" -- \
    "$CLUSTER_BIN/containerd" --config "$nd/containerd.toml" --log-level warn \
    > "$LOGS/containerd-$i.log" 2>&1 < /dev/null &
  # (wait_for's WHAT names no pid file here: pid_of only knows binaries named like their pid file.)
  wait_for "$READY_TIMEOUT" "containerd $i" alive_and "$RUN/containerd-$i.pid" containerd test -S "$sock" || { tail -20 "$LOGS/containerd-$i.log" >&2; die "containerd-$i did not start"; }
  ctrd_pid=$(pid_is "$RUN/containerd-$i.pid" "$CLUSTER_BIN/containerd") || { tail -20 "$LOGS/containerd-$i.log" >&2; die "containerd-$i exited"; }

  cat > "$nd/kubelet.yaml" <<EOK
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $gw
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
# Served on the bridge address only (not reachable from outside the machine); the API server has no kubelet
# client cert.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$sock
cgroupDriver: cgroupfs
cgroupRoot: /$cg
failCgroupV1: $FAIL_CGROUP_V1
failSwapOn: false
podLogsDir: $nd/pod-logs
registerWithTaints: [{key: flotilla.dev/real-node, value: "true", effect: NoSchedule}]
# The disk is shared and sometimes nearly full: evict only when it really is, and never GC test images.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 50
EOK
  # shellcheck disable=SC2016
  setsid nsenter --target "$ctrd_pid" --mount bash -c '
    set -e; pidf=$1 cg=$2; shift 2
    for h in /sys/fs/cgroup/*/; do echo $$ > "$h$cg/kubelet/cgroup.procs"; done
    echo $$ > "$pidf"; exec "$@"' node "$RUN/kubelet-$i.pid" "$cg" \
    "$CLUSTER_BIN/kubelet" --config "$nd/kubelet.yaml" --kubeconfig "$PKI/$name.kubeconfig" \
      --root-dir "$nd/kubelet" --hostname-override "$name" --node-ip "$gw" \
      --node-labels "flotilla.dev/real-node=true,type=real" --v 1 ${KUBELET_EXTRA_ARGS:-} \
    > "$LOGS/kubelet-$i.log" 2>&1 < /dev/null &
  wait_for 10 "kubelet $i" alive_and "$RUN/kubelet-$i.pid" kubelet true || die "kubelet-$i did not start"
  log "$name: containerd pid $ctrd_pid, kubelet pid $(cat "$RUN/kubelet-$i.pid"), pods on $br $subnet"
}

for ((i = 0; i < REAL_NODES; i++)); do
  "$CLUSTER_HACK/pki.sh" --node "$(real_node_name "$i")"
  start_node "$i"
done
for ((i = 0; i < REAL_NODES; i++)); do
  name=$(real_node_name "$i")
  if ! wait_for "$READY_TIMEOUT" "kubelet $i" alive_and "$RUN/kubelet-$i.pid" kubelet kc get node "$name"; then
    tail -30 "$LOGS/kubelet-$i.log" >&2; die "$name did not register"
  fi
  kc annotate --overwrite node "$name" "flotilla.dev/registry=$REGISTRY" "flotilla.dev/cri-socket=$NODEDIR/$i/containerd.sock" > /dev/null
  kc wait --for=condition=Ready "node/$name" --timeout="${READY_TIMEOUT}s" > /dev/null ||
    { tail -30 "$LOGS/kubelet-$i.log" >&2; die "$name not Ready"; }
done
log "$REAL_NODES real node(s) Ready after $(since "$T0") s (images: $REGISTRY/flotilla/busybox:v1,v2)"
