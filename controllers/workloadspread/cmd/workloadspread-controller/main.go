// Command workloadspread-controller runs Flotilla's WorkloadSpread
// controller and its pod webhook.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
