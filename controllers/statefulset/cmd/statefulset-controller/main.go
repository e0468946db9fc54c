// Command statefulset-controller runs Flotilla's Advanced StatefulSet controller.
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/statefulset/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
