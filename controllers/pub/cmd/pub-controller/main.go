// Command pub-controller runs Flotilla's PodUnavailableBudget controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/pub/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
