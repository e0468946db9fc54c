#!/usr/bin/env bash
# node-deps.sh — install the Debian packages the real node needs, only those missing (CI starts on a fresh
# machine; on a prepared one this is a dpkg query and nothing else):
#   runc                          the OCI runtime containerd's runc shim calls
#   containernetworking-plugins   CNI plugins bridge, host-local, loopback (/usr/lib/cni)
#   busybox-static                the one binary of the test image (hack/cluster/images.sh)
#   iptables                      the DNAT that lets pods reach the API server's Service (lib.sh apiserver_route)
set -euo pipefail
PKGS=(runc containernetworking-plugins busybox-static iptables)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "node-deps.sh: installing ${missing[*]}"
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y --no-install-recommends "${missing[@]}" ||
  { $SUDO apt-get update -q && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
