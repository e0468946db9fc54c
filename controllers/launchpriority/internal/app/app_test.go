package app

import (
	"testing"

	"github.com/flotilla-dev/flotilla/kit/app/apptest"
)

func TestBinary(t *testing.T) { apptest.CheckBinary(t, Binary) }
