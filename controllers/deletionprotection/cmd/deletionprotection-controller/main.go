// Command deletionprotection-controller serves Flotilla's delete-protection
// webhook for Namespaces and CustomResourceDefinitions labelled
// policy.kruise.io/delete-protection=Cascading.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/deletionprotection/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
