// Command cronjob-controller runs Flotilla's AdvancedCronJob controller.
package main

import (
	"os"
	_ "time/tzdata" // AdvancedCronJob time zones must resolve on images without a system tz database

	binary "github.com/flotilla-dev/flotilla/controllers/cronjob/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
