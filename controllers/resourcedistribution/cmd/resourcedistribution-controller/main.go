// Command resourcedistribution-controller runs Flotilla's ResourceDistribution controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
