#!/usr/bin/env bash
# Fails when the generated code or CRDs in the tree are not what
# hack/update-codegen.sh produces from the current API types. It regenerates
# into a temporary copy, so the working tree is never modified.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

mkdir -p "${TMP}/deploy/base"
cp -a "${ROOT}/apis" "${ROOT}/client" "${TMP}/"
if [[ -d "${ROOT}/deploy/base/crds" ]]; then
  cp -a "${ROOT}/deploy/base/crds" "${TMP}/deploy/base/"
fi

FLOTILLA_CODEGEN_ROOT="${TMP}" "${ROOT}/hack/update-codegen.sh" >/dev/null

status=0
for p in apis client deploy/base/crds; do
  if ! diff -r -u "${ROOT}/${p}" "${TMP}/${p}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "generated files are out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "generated files are up to date"
