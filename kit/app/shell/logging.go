package shell

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// Log encodings accepted by --log-format.
const (
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// NewLogger builds a zap logger writing to w (os.Stderr when nil) at
// verbosity v (logr V(n) messages are emitted for n <= v) in the given
// encoding, and returns it as a logr.Logger too.
func NewLogger(w io.Writer, format string, v int) (logr.Logger, *zap.Logger, error) {
	if w == nil {
		w = os.Stderr
	}
	if v < 0 || v > 127 {
		return logr.Logger{}, nil, fmt.Errorf("log verbosity must be in [0,127], got %d", v)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case LogFormatJSON:
		enc = zapcore.NewJSONEncoder(encCfg)
	case LogFormatConsole:
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return logr.Logger{}, nil, fmt.Errorf("unknown log format %q (want %q or %q)", format, LogFormatJSON, LogFormatConsole)
	}
	// logr V(n) maps to zap level -n, so the threshold is -v.
	level := zap.NewAtomicLevelAt(zapcore.Level(-v))
	core := zapcore.NewCore(enc, zapcore.AddSync(w), level)
	z := zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.AddSync(w)))
	return zapr.NewLoggerWithOptions(z, zapr.LogInfoLevel("v")), z, nil
}

// RouteKlog sends everything logged through klog (and therefore client-go)
// to logger, and sets klog's own verbosity to v so klog.V(n) checks agree
// with the logger. klog is process-global: call this once, from Main.
func RouteKlog(logger logr.Logger, v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", strconv.Itoa(v)); err != nil {
		return err
	}
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	return nil
}
