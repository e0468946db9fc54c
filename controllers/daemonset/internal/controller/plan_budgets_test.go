package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestSurgeAndUnavailable(t *testing.T) {
	cases := []struct {
		name               string
		ds                 *appsv1alpha1.DaemonSet
		desired            int
		surge, unavailable int
	}{
		{name: "no rollingUpdate: maxUnavailable 1", ds: dsWith(), desired: 10, unavailable: 1},
		{name: "OnDelete: no budget", ds: dsWith(func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteDaemonSetStrategyType
		}), desired: 10},
		{name: "percent rounds up", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxUnavailable = iop("25%") })), desired: 10, unavailable: 3},
		{name: "surge percent rounds up", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxSurge = iop("10%") })), desired: 11, surge: 2},
		{name: "only maxSurge: unavailable 0", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxSurge = iop("1") })), desired: 5, surge: 1},
		{name: "Surging alias defaults to surge 1", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Type = appsv1alpha1.SurgingRollingUpdateType })), desired: 5, surge: 1},
		{name: "Surging with only maxUnavailable 0: surge 1", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) {
			r.Type, r.MaxUnavailable = appsv1alpha1.SurgingRollingUpdateType, iop("0")
		})), desired: 5, surge: 1},
		{name: "both 0 (stored before admission rejected it): unavailable 1", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxSurge, r.MaxUnavailable = iop("0"), iop("0%") })), desired: 5, unavailable: 1},
		{name: "both 0 and no nodes: nothing", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxSurge, r.MaxUnavailable = iop("0"), iop("0") })), desired: 0},
		{name: "InPlaceIfPossible never surges", ds: dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) {
			r.Type, r.MaxSurge = appsv1alpha1.InplaceRollingUpdateType, iop("1")
		})), desired: 5, unavailable: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, u := surgeAndUnavailable(tc.ds, tc.desired)
			assert.Equal(t, tc.surge, s, "maxSurge")
			assert.Equal(t, tc.unavailable, u, "maxUnavailable")
		})
	}
}

func TestPartitionAndBurst(t *testing.T) {
	withPartition := func(v string) *appsv1alpha1.DaemonSet {
		return dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Partition = iop(v) }))
	}
	assert.Equal(t, 3, partition(withPartition("3"), 10))
	assert.Equal(t, 3, partition(withPartition("35%"), 10), "percent rounds down")
	assert.Equal(t, 0, partition(withPartition("9%"), 10))
	assert.Equal(t, 0, partition(dsWith(), 10))
	assert.Equal(t, 0, partition(dsWith(func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType}
	}), 10), "OnDelete ignores the partition")

	assert.Equal(t, 250, burstReplicas(dsWith(), 1000), "default 250")
	assert.Equal(t, 7, burstReplicas(dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.BurstReplicas = iop("75%") }), 10), "percent rounds down")
	assert.Equal(t, 1, burstReplicas(dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.BurstReplicas = iop("10%") }), 3), "never below 1")
	assert.Equal(t, 1, burstReplicas(dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.BurstReplicas = iop("10%") }), 0), "never below 1, even before desired is known")
}
