// Command containerrecreate-controller runs Flotilla's ContainerRecreateRequest controller (the manager side;
// the node agent recreates the containers).
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/containerrecreate/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
