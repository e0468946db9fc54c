# Shared by the hack/ scripts: where the repo is and which Go modules it has.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Workspace modules as relative dirs, from go.work (kept current by hack/update-workspace.sh).
modules() { sed -n 's|^\t\./\(.*\)$|\1|p' "$ROOT/go.work"; }
# Modules kept out of go.work and built on their own (GOWORK=off): charts/tools pulls in Helm, whose dependencies would
# raise shared ones (golang.org/x/*, grpc, otel) for every module built in the workspace.
standalone_modules() { echo charts/tools; }
# Module dirs that hold Go packages (a fresh module may have none yet).
package_patterns() {
  local m
  for m in $(modules); do
    if find "$ROOT/$m" -name '*.go' -print -quit | grep -q .; then echo "./$m/..."; fi
  done
}
