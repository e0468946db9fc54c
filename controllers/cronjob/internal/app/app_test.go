package app

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) {
	apptest.CheckBinary(t, Binary)
	_, err := kitapp.Parse(Binary(), []string{"--enable-advancedcronjob=false", "--enable-broadcastjob=false"}, io.Discard)
	require.NoError(t, err, "the binary's own flags parse")
}
