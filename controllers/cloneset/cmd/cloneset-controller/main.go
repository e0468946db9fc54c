// Command cloneset-controller runs Flotilla's CloneSet controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/cloneset/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
