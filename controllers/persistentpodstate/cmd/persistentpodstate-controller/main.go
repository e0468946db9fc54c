// Command persistentpodstate-controller runs Flotilla's PersistentPodState controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
