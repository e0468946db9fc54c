// Command uniteddeployment-controller runs the UnitedDeployment reconciler.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/uniteddeployment/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
