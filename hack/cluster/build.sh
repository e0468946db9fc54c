#!/usr/bin/env bash
# build.sh — build the local control plane binaries into bin/cluster/:
#   kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes v1.37.1),
#   etcd (go.etcd.io/etcd/server/v3 v3.7.0), kwok (sigs.k8s.io/kwok v0.8.0, with
#   wrapper/kwok-newest-pod.patch: stages play the newest copy of a pod),
#   local-provisioner (test/e2e/cmd/local-provisioner, this repo),
#   local-convert (test/e2e/cmd/local-convert, this repo: the CRD conversion endpoint, local-convert.sh).
#
# Everything comes from the Go module proxy. The five upstream binaries are built by ONE
# `go build` in the wrapper module (hack/cluster/wrapper): sharing one build graph is ~25%
# faster than building them one by one (~5 min cold on 2 cores instead of ~6.5).
#
# A stamp file (bin/cluster/.stamp) records what was built; when it matches, nothing is
# rebuilt and the script returns in well under a second (no `go` invocation on that path
# beyond `go env GOVERSION`). The stamp has one line per part so that editing the
# provisioner does not trigger the 5-minute control-plane build:
#   controlplane=<k8s>/<etcd>/<kwok>/<go>/<sha256 of wrapper go.mod+go.sum+ldflags+kwok patch>
#   provisioner=<go>/<sha256 of provisioner sources + test/e2e go.mod/go.sum>
#   convert=<go>/<sha256 of its sources, kit/webhook's, apis/apps's + test/e2e go.mod/go.sum>
#
# Env:
#   FORCE=1        rebuild everything regardless of the stamp
#   CLUSTER_BIN    output dir (default <repo>/bin/cluster)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN=${CLUSTER_BIN:-$REPO/bin/cluster}
STAMP=$BIN/.stamp
mkdir -p "$BIN"

# Versions. The k8s version must match the wrapper go.mod (regenerate it with
# gen-wrapper.sh when bumping); we read it from there rather than duplicating it.
W=$HERE/wrapper
modver() { awk -v m="$1" '($1==m && $2 ~ /^v/){print $2; exit}' "$W/go.mod"; }
K8S_VERSION=$(modver k8s.io/kubernetes)
ETCD_VERSION=$(modver go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(modver sigs.k8s.io/kwok)
if [ -z "$K8S_VERSION" ] || [ -z "$ETCD_VERSION" ] || [ -z "$KWOK_VERSION" ]; then
  echo "build.sh: cannot read versions from $W/go.mod (run gen-wrapper.sh)" >&2; exit 1
fi
GOVERSION=$(go env GOVERSION)

CP_BINS=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
KWOK_PATCH=$W/kwok-newest-pod.patch
PROV_DIR=$REPO/test/e2e/cmd/local-provisioner

MINOR=$(echo "${K8S_VERSION#v}" | cut -d. -f2)
# gitVersion is what `kubectl version` and discovery report; without it the apiserver says
# v0.0.0-master+$Format:%H$, which confuses version-gated clients. Like kubernetes'
# hack/lib/version.sh we stamp both component-base (server version) and client-go (the
# User-Agent of every in-cluster client, visible in audit logs). buildDate is fixed so that the
# output is reproducible. -s -w: no symbol tables (~30% smaller binaries).
LDF="-s -w"
for X in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF+=" -X $X.gitVersion=$K8S_VERSION -X $X.gitMajor=1 -X $X.gitMinor=$MINOR -X $X.gitTreeState=clean -X $X.buildDate=1970-01-01T00:00:00Z"
done

cp_key() {
  local h
  h=$( { cat "$W/go.mod" "$W/go.sum" "$KWOK_PATCH"; echo "$LDF"; } | sha256sum | cut -c1-16)
  echo "controlplane=$K8S_VERSION/$ETCD_VERSION/$KWOK_VERSION/$GOVERSION/$h"
}
prov_key() {
  local h
  h=$( { find "$PROV_DIR" -type f -name '*.go' -print0 | sort -z | xargs -0 cat
         cat "$REPO/test/e2e/go.mod" "$REPO/test/e2e/go.sum" 2>/dev/null || true; } | sha256sum | cut -c1-16)
  echo "provisioner=$GOVERSION/$h"
}
stamp_has() { [ -f "$STAMP" ] && grep -qxF "$1" "$STAMP"; }
stamp_set() { # replace the line for part $1 (controlplane|provisioner) with $2
  local tmp; tmp=$(mktemp "$BIN/.stamp.XXXXXX")
  { if [ -f "$STAMP" ]; then grep -v "^$1=" "$STAMP" || true; fi; echo "$2"; } > "$tmp"
  mv -f "$tmp" "$STAMP"
}
all_present() { local b; for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done; }

# Serialise concurrent invocations (several test binaries may call us at once).
exec 9>"$BIN/.lock"
flock 9

T0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
built=0

# --- 1. upstream control plane ------------------------------------------------
KEY=$(cp_key)
if [ "${FORCE:-}" != 1 ] && stamp_has "$KEY" && all_present "${CP_BINS[@]}"; then
  echo "build.sh: control plane up to date ($KEY)"
else
  echo "build.sh: building kube-apiserver/kcm/scheduler $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION ..."
  t=$(date +%s.%N)
  OUT=$(mktemp -d "$BIN/.build.XXXXXX")
  trap 'rm -rf "$OUT"' EXIT
  # kwok is built from a patched copy of its module (see the patch's header), through a workspace whose
  # only module is the wrapper: the versions of everything else stay the wrapper's.
  KWOK_DIR=$(cd "$W" && GOWORK=off go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | awk -F'"' '$2=="Dir"{print $4}')
  [ -d "$KWOK_DIR" ] || { echo "build.sh: cannot download sigs.k8s.io/kwok@$KWOK_VERSION" >&2; exit 1; }
  cp -R "$KWOK_DIR" "$OUT/kwok-src" && chmod -R u+w "$OUT/kwok-src"
  # The ceiling keeps git from finding this repository around bin/ (inside one, git apply would skip the paths).
  GIT_CEILING_DIRECTORIES="$OUT" git -C "$OUT/kwok-src" apply -p1 "$KWOK_PATCH" \
    || { echo "build.sh: $KWOK_PATCH does not apply to kwok $KWOK_VERSION (regenerate it for the new version)" >&2; exit 1; }
  grep -q 'func (c \*PodController) overtaken' "$OUT/kwok-src/pkg/kwok/controllers/pod_controller.go" \
    || { echo "build.sh: $KWOK_PATCH left kwok unchanged" >&2; exit 1; }
  printf 'go %s\n\nuse %s\n\nreplace sigs.k8s.io/kwok %s => %s\n' \
    "$(awk '$1=="go"{print $2; exit}' "$W/go.mod")" "$W" "$KWOK_VERSION" "$OUT/kwok-src" > "$OUT/go.work"
  ( cd "$W" && GOWORK="$OUT/go.work" GOFLAGS="-mod=readonly -buildvcs=false" \
      go build -trimpath -ldflags="$LDF" -o "$OUT/" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        go.etcd.io/etcd/server/v3 \
        sigs.k8s.io/kwok/cmd/kwok )
  mv "$OUT/server" "$OUT/etcd"   # etcd's main package is go.etcd.io/etcd/server/v3 -> binary "server"
  for b in "${CP_BINS[@]}"; do mv -f "$OUT/$b" "$BIN/$b"; done
  rm -rf "$OUT"; trap - EXIT
  stamp_set controlplane "$KEY"
  echo "build.sh: control plane built in $(elapsed "$t") s"
  built=1
fi

# --- 2. local PV provisioner (this repo) -------------------------------------
# build_e2e_cmd NAME STAMP KEY: builds test/e2e/cmd/NAME into $BIN (inside the workspace, go.work, like the rest of
# test/e2e) unless KEY is stamped and the binary is there.
build_e2e_cmd() {
  local name=$1 stamp=$2 key=$3 t
  if [ "${FORCE:-}" != 1 ] && stamp_has "$key" && all_present "$name"; then
    echo "build.sh: $name up to date"
    return
  fi
  t=$(date +%s.%N)
  ( cd "$REPO/test/e2e" && go build -trimpath -ldflags="-s -w" -o "$BIN/$name.tmp" "./cmd/$name" )
  mv -f "$BIN/$name.tmp" "$BIN/$name"
  stamp_set "$stamp" "$key"
  echo "build.sh: $name built in $(elapsed "$t") s"
  built=1
}
if [ -d "$PROV_DIR" ]; then
  build_e2e_cmd local-provisioner provisioner "$(prov_key)"
else
  echo "build.sh: $PROV_DIR missing, skipping local-provisioner" >&2
fi

# --- 2b. CRD conversion endpoint (this repo) -------------------------------------
CONV_DIRS=("$REPO/test/e2e/cmd/local-convert" "$REPO/kit/webhook" "$REPO/apis/apps")
conv_key() {
  local h
  h=$( { find "${CONV_DIRS[@]}" -type f -name '*.go' ! -name '*_test.go' -print0 | sort -z | xargs -0 cat
         cat "$REPO/test/e2e/go.mod" "$REPO/test/e2e/go.sum" 2>/dev/null || true; } | sha256sum | cut -c1-16)
  echo "convert=$GOVERSION/$h"
}
build_e2e_cmd local-convert convert "$(conv_key)"

# --- 3. real node (REAL_NODES>0 or BUILD_NODE=1): kubelet, containerd, registry ---------
# Three more parts, each its own module under wrapper/ and its own stamp line, so that adding them never
# relinks the control plane and a bump of one rebuilds only that one:
#   kubelet=<k8s>/<go>/<sha256 of wrapper/kubelet go.mod+go.sum+ldflags>
#   containerd=<version>/<go>/<sha256 of wrapper/containerd go.mod+go.sum+flags>
#   registry=<version>/<go>/<sha256 of wrapper/registry go.mod+go.sum+main.go>
# build_part NAME DIR KEYINPUT BINS PKGS... : go build PKGS in module DIR into BIN when NAME's key changed.
build_part() {
  local name=$1 dir=$2 key=$3 bins=$4; shift 4
  if [ "${FORCE:-}" != 1 ] && stamp_has "$key" && all_present $bins; then
    echo "build.sh: $name up to date ($key)"; return
  fi
  echo "build.sh: building $name ..."
  local t out b; t=$(date +%s.%N)
  out=$(mktemp -d "$BIN/.build.XXXXXX")
  ( cd "$dir" && GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -o "$out/" "$@" )
  for b in $bins; do mv -f "$out/$b" "$BIN/$b"; done
  rm -rf "$out"
  stamp_set "$name" "$key"
  echo "build.sh: $name built in $(elapsed "$t") s"
  built=1
}
modhash() { cat "$1/go.mod" "$1/go.sum"; }
wmodver() { awk -v m="$2" '($1==m && $2 ~ /^v/){print $2; exit} ($1=="require" && $2==m){print $3; exit}' "$W/$1/go.mod"; }
if [ "${REAL_NODES:-0}" != 0 ] || [ "${BUILD_NODE:-}" = 1 ]; then
  KEY="kubelet=$K8S_VERSION/$GOVERSION/$( { modhash "$W/kubelet"; echo "$LDF"; } | sha256sum | cut -c1-16)"
  build_part kubelet "$W/kubelet" "$KEY" kubelet -ldflags="$LDF" k8s.io/kubernetes/cmd/kubelet

  CTRD_VERSION=$(wmodver containerd github.com/containerd/containerd/v2)
  # Tags: no cgo storage backends (btrfs needs its C headers), no tracing exporter; the CRI plugin stays.
  CTRD_FLAGS="-tags=no_btrfs,no_devmapper,no_zfs,no_tracing,urfave_cli_no_docs -ldflags=-s -w -X github.com/containerd/containerd/v2/version.Version=$CTRD_VERSION -X github.com/containerd/containerd/v2/version.Revision=flotilla"
  KEY="containerd=$CTRD_VERSION/$GOVERSION/$( { modhash "$W/containerd"; echo "$CTRD_FLAGS"; } | sha256sum | cut -c1-16)"
  build_part containerd "$W/containerd" "$KEY" "containerd containerd-shim-runc-v2" \
    -tags=no_btrfs,no_devmapper,no_zfs,no_tracing,urfave_cli_no_docs \
    "-ldflags=${CTRD_FLAGS#*-ldflags=}" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

  REG_VERSION=$(wmodver registry github.com/distribution/distribution/v3)
  KEY="registry=$REG_VERSION/$GOVERSION/$( { modhash "$W/registry"; cat "$W/registry/cmd/registry/main.go"; } | sha256sum | cut -c1-16)"
  build_part registry "$W/registry" "$KEY" registry -ldflags="-s -w" ./cmd/registry
fi

if [ $built = 1 ]; then
  echo "build.sh: done in $(elapsed "$T0") s (wall)"
else
  echo "build.sh: nothing to do ($(elapsed "$T0") s)"
fi
