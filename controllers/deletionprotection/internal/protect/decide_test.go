package protect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamespace(t *testing.T) {
	cases := []struct {
		name  string
		value string
		c     Counts
		want  string
	}{
		{"unlabelled with pods", "", Counts{ActivePods: 3}, ""},
		{"unknown value with pods", "Never", Counts{ActivePods: 3}, ""},
		{"always, empty", Always, Counts{}, "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"},
		{"cascading, empty", Cascading, Counts{}, ""},
		{"cascading, active pods", Cascading, Counts{ActivePods: 2, BoundPVCs: 1},
			"forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 2>0"},
		{"cascading, bound claims only", Cascading, Counts{BoundPVCs: 1},
			`forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and "Bound" status pvc 1>0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Namespace(tc.value, tc.c)) })
	}
}

func TestCRD(t *testing.T) {
	cases := []struct {
		name  string
		value string
		gate  bool
		c     Counts
		want  string
	}{
		{"unlabelled with objects", "", true, Counts{Objects: 5}, ""},
		{"always, gate off", Always, false, Counts{}, "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"},
		{"always, gate on", Always, true, Counts{}, "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"},
		{"cascading, gate off, no objects", Cascading, false, Counts{}, "feature-gate DeletionProtectionForCRDCascadingGate is not enabled"},
		{"cascading, no objects", Cascading, true, Counts{}, ""},
		{"cascading, objects", Cascading, true, Counts{Objects: 1},
			"forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 1>0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CRD(tc.value, tc.gate, tc.c)
			assert.Equal(t, tc.want, got)
			if tc.value == Always || (tc.value == Cascading && tc.c.Objects > 0) {
				assert.True(t, strings.Contains(got, Label), "the denial names the label")
			}
		})
	}
}

func TestNeedsLookup(t *testing.T) {
	assert.False(t, NeedsLookup("", false, true))
	assert.False(t, NeedsLookup(Always, false, true))
	assert.True(t, NeedsLookup(Cascading, false, false), "namespaces do not depend on the CRD gate")
	assert.True(t, NeedsLookup(Cascading, true, true))
	assert.False(t, NeedsLookup(Cascading, true, false), "a CRD with the gate off is refused without a lookup")
}
