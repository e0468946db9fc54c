// Command imagepulljob-controller runs Flotilla's NodeImage and ImagePullJob controllers (the manager side of
// image pre-download; the node agent pulls).
package main

import (
	"os"

	binary "github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/app"
	"github.com/flotilla-dev/flotilla/kit/app"
)

func main() { os.Exit(app.Main(binary.Binary())) }
