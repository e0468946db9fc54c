#!/usr/bin/env bash
# pki.sh — certificates and kubeconfigs of the local control plane, under $CLUSTER_DIR/pki.
#
# Keys are ECDSA P-256: about 20x faster to generate than RSA-2048 and accepted everywhere in
# Kubernetes (TLS, client certs, service-account token signing as ES256). The PKI is created
# once and kept across restarts (so copied kubeconfigs stay valid); kubeconfigs are rewritten on
# every run because the apiserver port may change. Delete $CLUSTER_DIR/pki to start over.
#
#   ca.{crt,key}                 cluster CA (client certs + apiserver serving cert)
#   apiserver.{crt,key}          serving cert: 127.0.0.1, localhost, 10.96.0.1, kubernetes.default...
#   front-proxy-ca, front-proxy-client
#                                request-header auth; without it kcm/scheduler delegated authn
#                                logs "missing content for CA bundle ...requestheader" in a loop
#   sa.{key,pub}                 service-account token signing pair
#   <user>.{crt,key}, <user>.kubeconfig for:
#     admin        CN=flotilla-admin, O=system:masters   (also $CLUSTER_DIR/kubeconfig)
#     kcm          CN=system:kube-controller-manager     (bootstrap RBAC)
#     scheduler    CN=system:kube-scheduler              (bootstrap RBAC)
#     kwok         CN=kwok-controller                    (ClusterRole in manifests/bootstrap.yaml)
#     provisioner  CN=flotilla:local-provisioner         (ClusterRole in manifests/bootstrap.yaml)
#     real-node-<i> CN=system:node:real-node-<i>, O=system:nodes  (Node authorizer; only with --node NAME,
#                  called by node-up.sh)
#   webhook-client-ca.{crt,key}  CA of the client certificate the API server presents to admission webhooks
#   webhook-client.{crt,key}     CN=kube-apiserver-webhook-client, signed by webhook-client-ca (up.sh's
#                                AdmissionConfiguration; Flotilla's webhooks: --webhook-client-ca)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_USERS=()
while [ $# -gt 0 ]; do
  case $1 in --node) NODE_USERS+=("${2:?--node needs a name}"); shift 2 ;; *) die "pki.sh: unknown argument $1" ;; esac
done

mkdir -p "$PKI"
cd "$PKI"
umask 077

genkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
# selfca NAME CN
selfca() {
  genkey "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}
# leaf NAME CA SUBJECT EXTENDEDKEYUSAGE [SAN]
leaf() {
  local name=$1 ca=$2 subj=$3 eku=$4 san=${5:-}
  genkey "$name"
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
    -out "$name.crt" -days 3650 -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

if [ ! -s ca.crt ] || [ ! -f .complete ]; then
  t=$(now)
  rm -f ./*.crt ./*.key ./*.srl ./*.kubeconfig .complete
  selfca ca flotilla-local-ca
  leaf apiserver ca "/CN=kube-apiserver" serverAuth \
    "IP:127.0.0.1,IP:${SERVICE_CIDR%.*/*}.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  leaf admin       ca "/O=system:masters/CN=flotilla-admin" clientAuth
  leaf kcm         ca "/CN=system:kube-controller-manager" clientAuth
  leaf scheduler   ca "/CN=system:kube-scheduler" clientAuth
  leaf kwok        ca "/CN=kwok-controller" clientAuth
  leaf provisioner ca "/CN=flotilla:local-provisioner" clientAuth
  selfca front-proxy-ca flotilla-front-proxy-ca
  leaf front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
  genkey sa
  openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
  rm -f ./*.srl
  touch .complete   # marker: the set above is complete
  log "PKI generated in $(since "$t") s"
fi

# The webhook client pair has its own CA, so that a webhook trusting it accepts the API server only (the
# cluster CA also signs every other client). Made when missing: a PKI from before it gains it.
if [ ! -s webhook-client.crt ]; then
  selfca webhook-client-ca flotilla-webhook-client-ca
  leaf webhook-client webhook-client-ca "/CN=kube-apiserver-webhook-client" clientAuth
  rm -f ./*.srl
fi

for u in "${NODE_USERS[@]}"; do
  [ -s "$u.crt" ] || leaf "$u" ca "/O=system:nodes/CN=system:node:$u" clientAuth
  rm -f ./*.srl
done

# Kubeconfigs (embedded certs; written directly, 20x faster than `kubectl config set-*`).
b64() { base64 -w0 < "$1"; }
for u in admin kcm scheduler kwok provisioner "${NODE_USERS[@]}"; do
  cat > "$u.kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: flotilla-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 ca.crt)
users:
- name: $u
  user:
    client-certificate-data: $(b64 "$u.crt")
    client-key-data: $(b64 "$u.key")
contexts:
- name: flotilla-local
  context: {cluster: flotilla-local, user: $u}
current-context: flotilla-local
EOK
done
cp admin.kubeconfig "$CLUSTER_DIR/kubeconfig"
