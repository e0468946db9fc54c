#!/usr/bin/env bash
# local-convert.sh — start the CRD conversion endpoint of the local control plane (idempotent; up.sh calls it,
# down.sh stops it). The DaemonSet and SidecarSet CRDs store v1beta1 and convert by webhook (apis/crd-patches), so
# every v1alpha1 read or write of them needs one, also when no controller runs (make test stops make run's):
# $CLUSTER_BIN/local-convert (test/e2e/cmd/local-convert: kit/webhook's conversion handler over
# apis/apps/conversion.Convert) serves it on this host's first non-loopback address, port LOCAL_CONVERT_PORT, and
# keeps the selector-less Services daemonset-controller-webhook / sidecarset-controller-conversion in
# LOCAL_CONVERT_NAMESPACE (flotilla-local) with Endpoints to itself, and the caBundle of the CRDs whose stanza names
# that namespace (kit/testenv and deploy/overlays/local point the stanza there).
#
# Its serving certificate (pki/local-convert/, signed by the cluster CA) covers the Services' DNS names and the
# address; it is remade when the address changed. Log: logs/local-convert.log.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
READY_TIMEOUT=${READY_TIMEOUT:-120}
[ -x "$CLUSTER_BIN/local-convert" ] || die "$CLUSTER_BIN/local-convert missing: run hack/cluster/build.sh (make cluster-build)"
[ -s "$PKI/ca.key" ] || die "$PKI/ca.key missing: the cluster is not set up (up.sh)"
ip=$(host_address)
[ -n "$ip" ] || die "local-convert: this host has no non-loopback IPv4 address"
addr=$ip:$LOCAL_CONVERT_PORT
ns=$LOCAL_CONVERT_NAMESPACE

# Already running at this address and from the current binary (build.sh replaced it: "(deleted)"): nothing to do.
if pid=$(pid_of local-convert) && [ "$(cat "$RUN/local-convert.addr" 2>/dev/null)" = "$addr/$ns" ] &&
  [[ $(readlink "/proc/$pid/exe") != *" (deleted)" ]]; then
  exit 0
fi
if pid=$(pid_of local-convert); then
  log "local-convert: address or binary changed, restarting it"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
fi

# Serving certificate for the Services' names and the address.
dir=$PKI/local-convert
services="daemonset-controller-webhook sidecarset-controller-conversion"
if [ "$(cat "$dir/san" 2>/dev/null)" != "$ip/$ns/$services" ] || [ ! -s "$dir/tls.crt" ]; then
  mkdir -p "$dir"
  ( umask 077; cd "$dir"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out tls.key 2>/dev/null
    openssl req -new -key tls.key -subj "/CN=flotilla-local-convert" -out tls.csr 2>/dev/null
    san="IP:$ip"
    for s in $services; do
      san+=",DNS:$s.$ns.svc,DNS:$s.$ns.svc.cluster.local"
    done
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" "subjectAltName=$san" > tls.ext
    openssl x509 -req -in tls.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -out tls.crt -days 3650 \
      -extfile tls.ext 2>/dev/null
    rm -f tls.csr tls.ext "$PKI"/*.srl
    cp "$PKI/ca.crt" ca.crt
    echo "$ip/$ns/$services" > san )
fi

mkdir -p "$LOGS" "$RUN"
[ -f "$LOGS/local-convert.log" ] && mv -f "$LOGS/local-convert.log" "$LOGS/local-convert.log.prev"
# shellcheck disable=SC2016  # $$ and $@ are expanded by the inner bash
setsid bash -c 'echo $$ > "$0"; exec "$@"' "$RUN/local-convert.pid" "$CLUSTER_BIN/local-convert" \
  --kubeconfig="$CLUSTER_DIR/kubeconfig" --cert-dir="$dir" --bind-address="$addr" --namespace="$ns" \
  > "$LOGS/local-convert.log" 2>&1 < /dev/null &
for _ in $(seq 100); do [ -s "$RUN/local-convert.pid" ] && break; sleep 0.01; done
echo "$addr/$ns" > "$RUN/local-convert.addr"
# Up: it answers TLS with the cluster CA's certificate for the Service's name (any HTTP status), and its Endpoints
# exist.
tls_up() {
  local code
  code=$(curl -s --max-time 2 --cacert "$PKI/ca.crt" -o /dev/null -w '%{http_code}' \
    --resolve "daemonset-controller-webhook.$ns.svc:$LOCAL_CONVERT_PORT:$ip" \
    "https://daemonset-controller-webhook.$ns.svc:$LOCAL_CONVERT_PORT/convert") || true
  [ "${code:-000}" != 000 ]
}
wait_for "$READY_TIMEOUT" local-convert tls_up || { tail -n 20 "$LOGS/local-convert.log" >&2; die "local-convert not serving"; }
wait_for "$READY_TIMEOUT" local-convert kc -n "$ns" get endpoints sidecarset-controller-conversion ||
  { tail -n 20 "$LOGS/local-convert.log" >&2; die "local-convert not up"; }
log "local-convert: CRD conversion on https://$addr$( [ "$ns" = flotilla-local ] || echo " (namespace $ns)")"
