package app

import (
	"io"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	if len(Gates()) == 0 {
		t.Fatal("daemonset-controller registers its feature gates")
	}
}

// The conversion webhook's flags are the other webhook binaries': its own
// Secret and Service by default.
func TestWebhookFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	_, err := kitapp.Parse(Binary(), []string{"--webhook-port=19445", "--webhook-host=127.0.0.1"}, io.Discard)
	require.NoError(t, err)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Binary().AddFlags(fs)
	for flag, want := range map[string]string{
		"webhook-secret-name": "daemonset-controller-webhook-certs", "webhook-service-name": "daemonset-controller-webhook",
		"webhook-secret-namespace": "flotilla-system", "webhook-port": "9443", "webhook-disable": "false",
	} {
		f := fs.Lookup(flag)
		require.NotNil(t, f, flag)
		assert.Equal(t, want, f.DefValue, flag)
	}
}
