// Command probe-agent runs the probes of its node's NodePodProbe (one per
// node, a DaemonSet) and reports their results in its status.
package main

import (
	"os"

	"github.com/flotilla-dev/flotilla/controllers/probe/internal/agentapp"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

func main() { os.Exit(shell.Main(agentapp.Binary())) }
