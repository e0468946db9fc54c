// Package tools pins the versions of the code generators used by
// hack/update-codegen.sh (see tools.go, built only with the "tools" tag).
// The generators are installed into bin/tools by that script, together with
// crdpatch (./crdpatch), the repository's own post-processing step for the
// generated CRDs.
package tools
