package features

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"
)

func TestNewGateRegistersOnlyGivenGates(t *testing.T) {
	g, err := NewGate(CloneSetShortHash, PodIndexLabel)
	require.NoError(t, err)
	all := g.GetAll()
	assert.Contains(t, all, CloneSetShortHash)
	assert.Contains(t, all, PodIndexLabel)
	assert.NotContains(t, all, StatefulSetAutoDeletePVC)
	assert.False(t, g.Enabled(CloneSetShortHash), "alpha default off")
	assert.True(t, g.Enabled(PodIndexLabel), "beta default on")
	assert.Equal(t, map[string]bool{"CloneSetShortHash": false, "PodIndexLabel": true}, Values(g))
}

func TestNewGateRejectsUnknown(t *testing.T) {
	_, err := NewGate("NoSuchGate")
	require.Error(t, err)
	assert.Panics(t, func() { MustNewGate("NoSuchGate") })
}

func TestGatesAreIndependent(t *testing.T) {
	a := MustNewGate(CloneSetShortHash)
	b := MustNewGate(CloneSetShortHash)
	require.NoError(t, a.Set("CloneSetShortHash=true"))
	assert.True(t, a.Enabled(CloneSetShortHash))
	assert.False(t, b.Enabled(CloneSetShortHash))
}

func TestFeatureGatesFlag(t *testing.T) {
	g := MustNewGate(CloneSetShortHash, PreDownloadImageForInPlaceUpdate, InPlaceUpdateEnvFromMetadata)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	g.AddFlag(fs)
	require.NoError(t, fs.Parse([]string{"--feature-gates=CloneSetShortHash=true,InPlaceUpdateEnvFromMetadata=false"}))
	assert.True(t, g.Enabled(CloneSetShortHash))
	assert.False(t, g.Enabled(InPlaceUpdateEnvFromMetadata))
	assert.False(t, g.Enabled(PreDownloadImageForInPlaceUpdate))

	// A gate the binary did not register is rejected.
	g2 := MustNewGate(CloneSetShortHash)
	fs2 := pflag.NewFlagSet("t", pflag.ContinueOnError)
	g2.AddFlag(fs2)
	err := fs2.Parse([]string{"--feature-gates=StatefulSetStartOrdinal=true"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "StatefulSetStartOrdinal")
}

func TestDefaultsMatchReference(t *testing.T) {
	// KruiseDaemon is the one deliberate difference: true in OpenKruise,
	// false here because the node agent is installed on its own (see its doc).
	on := []featuregate.Feature{PodWebhook, PodUnavailableBudgetDeleteGate, InPlaceUpdateEnvFromMetadata,
		StatefulSetAutoDeletePVC, PodProbeMarkerGate, PodIndexLabel, WorkloadSpread}
	for _, f := range Known() {
		s, ok := Spec(f)
		require.True(t, ok)
		want := false
		for _, o := range on {
			if o == f {
				want = true
			}
		}
		assert.Equal(t, want, s.Default, "default of %s", f)
	}
}

func TestResolve(t *testing.T) {
	t.Run("PodWebhook off forces webhook features off", func(t *testing.T) {
		g := MustNewGate(PodWebhook, PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate, InPlacePodVerticalScaling)
		require.NoError(t, g.Set("PodWebhook=false,PodUnavailableBudgetUpdateGate=true,InPlacePodVerticalScaling=true"))
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Equal(t, []featuregate.Feature{PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate}, forced)
		assert.False(t, g.Enabled(PodUnavailableBudgetDeleteGate))
		assert.False(t, g.Enabled(PodUnavailableBudgetUpdateGate))
		assert.True(t, g.Enabled(InPlacePodVerticalScaling), "unrelated gate untouched")
	})
	t.Run("KruiseDaemon off forces node-agent features off", func(t *testing.T) {
		g := MustNewGate(KruiseDaemon, PodProbeMarkerGate, EnablePodProbeMarkerOnServerless)
		require.NoError(t, g.Set("KruiseDaemon=false,EnablePodProbeMarkerOnServerless=true"))
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Equal(t, []featuregate.Feature{PodProbeMarkerGate}, forced)
		assert.True(t, g.Enabled(EnablePodProbeMarkerOnServerless))
	})
	t.Run("ResourcesDeletionProtection off forces the CRD cascading check off", func(t *testing.T) {
		g := MustNewGate(ResourcesDeletionProtection, DeletionProtectionForCRDCascadingGate)
		require.NoError(t, g.Set("DeletionProtectionForCRDCascadingGate=true"))
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Equal(t, []featuregate.Feature{DeletionProtectionForCRDCascadingGate}, forced)
		assert.False(t, g.Enabled(DeletionProtectionForCRDCascadingGate))
	})
	t.Run("rule without registered trigger does nothing", func(t *testing.T) {
		g := MustNewGate(InPlaceUpdateEnvFromMetadata)
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Empty(t, forced)
		assert.True(t, g.Enabled(InPlaceUpdateEnvFromMetadata))
	})
	t.Run("defaults: no node agent known, so its features are off", func(t *testing.T) {
		g := MustNewGate(Known()...)
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Equal(t, []featuregate.Feature{InPlaceUpdateEnvFromMetadata, PodProbeMarkerGate}, forced)
	})
	t.Run("KruiseDaemon=true keeps node-agent features at their defaults", func(t *testing.T) {
		g := MustNewGate(Known()...)
		require.NoError(t, g.Set("KruiseDaemon=true"))
		forced, err := Resolve(g)
		require.NoError(t, err)
		assert.Empty(t, forced)
		assert.True(t, g.Enabled(InPlaceUpdateEnvFromMetadata))
	})
}
