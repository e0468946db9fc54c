#!/usr/bin/env bash
# node-down.sh [--node I] — stop the real nodes of $CLUSTER_DIR (default: all of them, and the registry).
# Everything is found from this cluster's own records, never by process name:
#   1. kubelet-<i> and containerd-<i> by their pid files (checked against /proc/<pid>/exe), SIGTERM then SIGKILL;
#   2. every process left in the node's cgroup tree /flotilla-<NODE_ID>-<i> (shims, pod sandboxes, containers),
#      SIGKILL, until the tree is empty; then the tree is removed in every hierarchy;
#   3. with the node's last process its mount namespace goes, and with it every container, volume and
#      network-namespace mount (none was ever visible on the host) and the pods' veths;
#   4. the node's bridge flt<NODE_ID><i>.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ONLY=
while [ $# -gt 0 ]; do
  case $1 in --node) ONLY=${2:?}; shift 2 ;; *) die "node-down.sh: unknown argument $1" ;; esac
done
running() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [[ $s != Z* ]]; }
stop_pid() { # stop_pid PIDFILE BINARY
  local pid
  if pid=$(pid_is "$1" "$2"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 200); do running "$pid" || break; sleep 0.05; done
    running "$pid" && { kill -KILL "$pid" 2>/dev/null || true; for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done; }
  fi
  rm -f "$1"
}
cg_procs() { # every pid in the tree of cgroup $1, in any hierarchy
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$1" ] && find "$h$1" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

nodes=()
if [ -n "$ONLY" ]; then nodes=("$ONLY"); else
  for f in "$RUN"/kubelet-*.pid "$RUN"/containerd-*.pid; do [ -e "$f" ] && { f=${f##*-}; nodes+=("${f%.pid}"); }; done
  for d in /sys/fs/cgroup/pids/flotilla-"$NODE_ID"-*; do [ -d "$d" ] && nodes+=("${d##*-}"); done
  mapfile -t nodes < <(printf '%s\n' "${nodes[@]}" | sort -un | sed '/^$/d')
fi

for i in "${nodes[@]}"; do
  cg=$(real_node_cgroup "$i")
  stop_pid "$RUN/kubelet-$i.pid" "$CLUSTER_BIN/kubelet"
  stop_pid "$RUN/containerd-$i.pid" "$CLUSTER_BIN/containerd"
  deadline=$(( $(date +%s) + 20 ))
  while pids=$(cg_procs "$cg") && [ -n "$pids" ]; do
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    [ "$(date +%s)" -lt "$deadline" ] || { log "node $i: processes left in cgroup $cg: $pids"; break; }
    sleep 0.1
  done
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$cg" ] && find "$h$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  br=$(real_node_bridge "$i")
  while apiserver_route "$br" -D 2>/dev/null; do :; done
  ! ip link show "$br" > /dev/null 2>&1 || ip link del "$br" || true
  log "real node $i stopped"
done
if [ -z "$ONLY" ]; then stop_pid "$RUN/registry.pid" "$CLUSTER_BIN/registry"; fi
