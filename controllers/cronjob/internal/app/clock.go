//go:build !e2eclock

package app

import (
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"
)

// clockOptions: a production binary runs on the shell's clock and has no
// flag to move it. clock_e2eclock.go (build tag e2eclock, used only by
// test/e2e/cronjob) replaces this file.
type clockOptions struct{}

func (clockOptions) addFlags(*pflag.FlagSet)                  {}
func (clockOptions) wrap(c clock.WithTicker) clock.WithTicker { return c }
