#!/usr/bin/env bash
# Regenerates go.work from the modules found in the tree, so adding a module never needs a hand edit.
set -euo pipefail
cd "$(dirname "$0")/.."
mods=$(find . -name go.mod -not -path './bin/*' -not -path './.cluster/*' -not -path './hack/cluster/wrapper' -not -path './hack/cluster/wrapper/*' \
  -not -path './charts/tools/*' \
  | sed 's|/go.mod$||' | sort)
{
  echo "go 1.26.0"
  echo
  echo "use ("
  for m in $mods; do echo "	$m"; done
  echo ")"
} > go.work
