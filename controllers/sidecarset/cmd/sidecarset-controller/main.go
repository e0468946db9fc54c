// Command sidecarset-controller runs Flotilla's SidecarSet controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
