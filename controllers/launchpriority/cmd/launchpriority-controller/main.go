// Command launchpriority-controller runs Flotilla's container launch priority: the pod webhook adding the
// KRUISE_CONTAINER_BARRIER env (every replica) and the controller opening each pod's barrier ConfigMap key by
// key as its containers become ready (the leader).
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
