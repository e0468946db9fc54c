// Command daemonset-controller runs Flotilla's Advanced DaemonSet controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/daemonset/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
