// Command probe-controller runs Flotilla's PodProbeMarker and NodePodProbe controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/probe/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
