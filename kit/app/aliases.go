package app

import "github.com/flotilla-dev/flotilla/kit/app/shell"

// What kit/app shares with kit/app/shell, under the names its binaries
// already use.
type (
	Controller      = shell.Controller
	InformerFactory = shell.InformerFactory
	Source          = shell.Source
	Options         = shell.Options
	Parsed          = shell.Parsed
	Metrics         = shell.Metrics
	Health          = shell.Health
	Check           = shell.Check
	Counter         = shell.Counter
)

const (
	DefaultLeaseNamespace = shell.DefaultLeaseNamespace
	DefaultGCPercent      = shell.DefaultGCPercent
	LogFormatJSON         = shell.LogFormatJSON
	LogFormatConsole      = shell.LogFormatConsole
)

var (
	DefaultOptions   = shell.DefaultOptions
	NewMetrics       = shell.NewMetrics
	NewHealth        = shell.NewHealth
	NewLogger        = shell.NewLogger
	RouteKlog        = shell.RouteKlog
	RegisterCounters = shell.RegisterCounters
)
