#!/usr/bin/env bash
# images.sh — build the real node's test images from Debian's busybox-static and push them to the local
# registry ($REGISTRY, started by node-up.sh). No Docker, no internet: the layer is a reproducible tar
# (fixed mtime/owner, gzip -n) and the push is the registry HTTP API through curl.
#
#   $REGISTRY/flotilla/busybox:v1, :v2   one layer (/bin/busybox + an applet symlink per command: sh, sleep,
#                                        httpd, nc, wget, ...); the tags differ by their config (env
#                                        FLOTILLA_IMAGE=<tag>), so their digests and the kubelet's imageID differ
#   $REGISTRY/flotilla/pause:1           the pod sandbox image (containerd's pinned sandbox image): a shell
#                                        that sleeps until SIGTERM
# Idempotent: blobs the registry has are not sent again.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

R=http://$REGISTRY/v2
has_tag() { curl -sf -o /dev/null -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$R/$1/manifests/$2"; }
# The registry's storage outlives a cluster restart ($CLUSTER_DIR/data/registry): nothing to do when all is there.
if has_tag flotilla/busybox v1 && has_tag flotilla/busybox v2 && has_tag flotilla/pause 1; then exit 0; fi

BB=/usr/bin/busybox   # busybox-static (node-deps.sh)
[ -x "$BB" ] || die "$BB missing (hack/cluster/node-deps.sh installs busybox-static)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/root/bin" "$W/root/etc" "$W/root/tmp" "$W/root/proc" "$W/root/sys" "$W/root/dev" "$W/root/www"
cp "$BB" "$W/root/bin/busybox"
for a in $("$BB" --list); do [ "$a" = busybox ] || ln -s busybox "$W/root/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$W/root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$W/root/etc/group"
echo ok > "$W/root/www/index.html"
chmod 1777 "$W/root/tmp"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$W/root" -cf "$W/layer.tar" .
gzip -n -c "$W/layer.tar" > "$W/layer.tgz"
sha() { sha256sum "$1" | cut -d' ' -f1; }
DIFF=$(sha "$W/layer.tar"); LAYER=$(sha "$W/layer.tgz"); LSIZE=$(stat -c %s "$W/layer.tgz")

push_blob() { # push_blob REPO FILE
  local d; d=$(sha "$2")
  curl -sf -o /dev/null -I "$R/$1/blobs/sha256:$d" && return 0
  local loc
  loc=$(curl -sf -D - -o /dev/null -X POST "$R/$1/blobs/uploads/" | awk 'tolower($1)=="location:"{print $2}' | tr -d '\r')
  [ -n "$loc" ] || die "registry: no upload location for $1"
  case $loc in http*) ;; *) loc=http://$REGISTRY$loc ;; esac
  case $loc in *\?*) loc="$loc&digest=sha256:$d" ;; *) loc="$loc?digest=sha256:$d" ;; esac
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$2" "$loc" ||
    die "registry: upload of $2 to $1 failed"
}
push_image() { # push_image REPO TAG CONFIG_JSON_CONTAINER_CONFIG
  local repo=$1 tag=$2 cfg=$W/$1-$2.config.json man=$W/$1-$2.manifest.json
  mkdir -p "$(dirname "$cfg")"
  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$3" "$DIFF" > "$cfg"
  push_blob "$repo" "$W/layer.tgz"
  push_blob "$repo" "$cfg"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%d}]}' \
    "$(sha "$cfg")" "$(stat -c %s "$cfg")" "$LAYER" "$LSIZE" > "$man"
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    --data-binary "@$man" "$R/$repo/manifests/$tag" || die "registry: manifest $repo:$tag rejected"
}
for tag in v1 v2; do
  push_image flotilla/busybox "$tag" "{\"Env\":[\"PATH=/bin\",\"FLOTILLA_IMAGE=$tag\"],\"Cmd\":[\"/bin/sh\"],\"Labels\":{\"dev.flotilla.image\":\"$tag\"}}"
done
push_image flotilla/pause 1 '{"Env":["PATH=/bin"],"Entrypoint":["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"]}'
log "images pushed to $REGISTRY: flotilla/busybox:v1 flotilla/busybox:v2 flotilla/pause:1"
