package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync returns errors.Join(scaleErr, updateErr); the loop retries only what
// is not permanent.
func TestInPlaceOnlyIsPermanent(t *testing.T) {
	refused := fmt.Errorf("pod web-0: %w", errInPlaceOnly)
	assert.True(t, controller.IsPermanent(errors.Join(nil, refused)), "reported in status and events, not retried")
	assert.ErrorIs(t, refused, errInPlaceOnly)
	transient := errors.New("connection refused")
	assert.ErrorIs(t, controller.Retryable(errors.Join(transient, refused)), transient,
		"a failed scale next to a refused in-place update is still retried")
	assert.ErrorIs(t, controller.Retryable(errors.Join(nil, refused, transient)), transient)
}
