//go:build tools

// The blank imports below pin the code generators used by hack/update-codegen.sh.
// Nothing here is compiled into a binary; the blank imports only keep the
// versions in go.mod so every engineer builds identical generators.
package tools

import (
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/applyconfiguration-gen"
	_ "k8s.io/code-generator/cmd/client-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/informer-gen"
	_ "k8s.io/code-generator/cmd/lister-gen"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
