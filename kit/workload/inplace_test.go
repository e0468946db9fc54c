package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// A "no node agent record" refusal taken from the cache is lifted when the pod on the API server has the record,
// and kept when it has none, when the name now belongs to another pod or when the pod is gone; other refusals are
// not looked up.
func TestConfirmAgentRecord(t *testing.T) {
	noRecord := inplace.NotInPlaceNoAgentRecord
	cached := pod("p", nil, nil)
	recorded := cached.DeepCopy()
	recorded.Annotations = map[string]string{pub.RuntimeContainerMetaKey: `{"containers":[]}`}
	replaced := recorded.DeepCopy()
	replaced.UID = "another"
	for _, tc := range []struct {
		name string
		live []any
		why  string
		want string
	}{
		{"recorded on the API server", []any{recorded}, noRecord, ""},
		{"no record there either", []any{cached}, noRecord, noRecord},
		{"another pod of that name", []any{replaced}, noRecord, noRecord},
		{"gone", nil, noRecord, noRecord},
		{"another refusal", []any{recorded}, "the pod's revision is gone", "the pod's revision is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, kube, _ := newBase(t, Spec{PodLabel: "app"}, tc.live...)
			kube.ClearActions()
			got, err := b.ConfirmAgentRecord(t.Context(), cached, tc.why)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.why != noRecord {
				assert.Empty(t, kube.Actions(), "no read for a refusal the cache decides")
			}
		})
	}
}
