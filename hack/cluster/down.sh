#!/usr/bin/env bash
# down.sh — stop the local control plane in $CLUSTER_DIR (default <repo>/.cluster).
# Only processes this project started are signalled: each pid comes from run/<name>.pid and is
# checked to still be $CLUSTER_BIN/<name> (a recycled pid is left alone). SIGTERM first, SIGKILL
# after 10 s. Logs and PKI stay; etcd data is discarded at the next up.sh anyway.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# running PID: alive and not a zombie. Our processes are re-parented to PID 1 once up.sh exits,
# and PID 1 of this VM reaps children only every ~2 s; `kill -0` alone would count zombies.
running() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [[ $s != Z* ]]; }

# Real nodes first: their kubelets talk to the API server until they stop (no-op without real nodes).
"$CLUSTER_HACK/node-down.sh"

stopped=0
# stop_one NAME: SIGTERM the process of run/NAME.pid if it is still ours, SIGKILL after 10 s.
stop_one() {
  local c=$1 pid
  [ -f "$RUN/$c.pid" ] || return 0
  if pid=$(pid_of "$c"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 200); do running "$pid" || break; sleep 0.05; done
    if running "$pid"; then
      log "$c (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done
    fi
    stopped=$((stopped + 1))
  else
    log "$c: stale pid file (process gone or not ours), removing it"
  fi
  rm -f "$RUN/$c.pid"
}
# The conversion endpoint (local-convert.sh) is a client of the API server: before it.
stop_one local-convert
rm -f "$RUN/local-convert.addr"
for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
  stop_one "${COMPONENTS[$i]}"
done
log "stopped $stopped processes in $CLUSTER_DIR (logs kept in $LOGS)"
