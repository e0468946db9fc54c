# Shared by the hack/ scripts: where the repo is and which Go modules it has.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Workspace modules as relative dirs, from go.work (kept current by hack/update-workspace.sh).
modules() { sed -n 's|^\t\./\(.*\)$|\1|p' "$ROOT/go.work"; }
# Module dirs that hold Go packages (a fresh module may have none yet).
package_patterns() {
  local m
  for m in $(modules); do
    if find "$ROOT/$m" -name '*.go' -print -quit | grep -q .; then echo "./$m/..."; fi
  done
}
