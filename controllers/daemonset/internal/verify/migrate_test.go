package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestMigrateFromAppsV1: an apps/v1 DaemonSet deleted with --cascade=orphan
// and created again as an apps.kruise.io/v1alpha1 DaemonSet from its own
// manifest (metadata, selector and the server-defaulted template, as
// `kubectl get -o yaml` gives them; OpenKruise's documented migration) gets
// the running pods adopted — each seen with the new DaemonSet as controller —
// and neither deletes nor creates a pod: the pods count as updated, the
// status settles on them. The manifest carries apps/v1's
// deprecated.daemonset.template.generation annotation, which the pods'
// pod-template-generation label matches.
func TestMigrateFromAppsV1(t *testing.T) { migrate(t, true) }

// TestMigrateFromAppsV1NewManifest: the same with a manifest written anew —
// the same template, without apps/v1's annotations. Upstream and OpenKruise
// still keep the pods: they adopt the orphaned ControllerRevision whose data
// equals the template (ClaimControllerRevisions + Match), so its hash, which
// the pods carry, stays the current one.
func TestMigrateFromAppsV1NewManifest(t *testing.T) { migrate(t, false) }

func migrate(t *testing.T, keepAnnotations bool) {
	h := newHarness(t)
	f := h.newFleet(3)
	ctx := context.Background()
	upstreamDS{h}.create(f.template(parityApp, imageV1))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		if got := h.layout(parityApp, f.names); got != "n0=r1 n1=r1 n2=r1" {
			return false, fmt.Errorf("apps/v1 pods: %s", got)
		}
		return true, nil
	})
	old, err := h.Env.Kube.AppsV1().DaemonSets(h.NS).Get(ctx, parityApp, metav1.GetOptions{})
	require.NoError(t, err)

	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, h.Env.Kube.AppsV1().DaemonSets(h.NS).Delete(ctx, parityApp, metav1.DeleteOptions{PropagationPolicy: &orphan}))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods(parityApp) {
			if metav1.GetControllerOf(&p) != nil {
				return false, fmt.Errorf("pod %s still controlled", p.Name)
			}
		}
		return true, nil
	})
	orphans := map[string]types.UID{}
	for _, p := range h.pods(parityApp) {
		orphans[p.Name] = p.UID
	}
	require.Len(t, orphans, 3)

	w := h.watchPods(parityApp)
	startOurs(h)
	one := intstr.FromInt32(1)
	meta := metav1.ObjectMeta{Name: old.Name, Labels: old.Labels}
	if keepAnnotations {
		meta.Annotations = old.Annotations
	}
	ds := &appsv1alpha1.DaemonSet{
		ObjectMeta: meta,
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: old.Spec.Selector, Template: old.Spec.Template, MinReadySeconds: old.Spec.MinReadySeconds,
			RevisionHistoryLimit: old.Spec.RevisionHistoryLimit,
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: &one}},
		},
	}
	created, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)

	want := dsStatus{3, 3, 0, 3, 3, 3, 0, true}
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for name, uid := range orphans {
			if w.controller(uid) != created.UID {
				return false, fmt.Errorf("orphan %s (%s) not seen adopted", name, uid)
			}
		}
		if st := (oursDS{h}).status(); st != want {
			return false, fmt.Errorf("status %v observed %v, want %v", st, st.Observed, want)
		}
		return true, nil
	})
	// Nothing more happens: no pod replaced, however long we look.
	testenv.Consistently(t, 10*time.Second, func() error {
		if n := w.opCount(); n != 0 {
			ops, _ := w.opsSince(nil, h.revisions(), f.names)
			return fmt.Errorf("pods changed after the migration: %v", ops)
		}
		return nil
	})
	require.NoError(t, w.caughtUp(h, parityApp))
	got := map[string]types.UID{}
	for _, p := range h.pods(parityApp) {
		got[p.Name] = p.UID
	}
	assert.Equal(t, orphans, got, "the same pods, not recreated")
}
