package controller

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// createPods creates in slow-start batches 1, 2, 4, … and stops after the
// first batch with a failure: with room for 3 pods out of 10, the third batch
// (4 pods) fails and nothing more is attempted — 7 requests, not 10.
func TestCreatePodsSlowStart(t *testing.T) {
	for _, tc := range []struct {
		name           string
		n, room        int
		attempts, pods int
		wantErr        bool
	}{
		{name: "all succeed", n: 10, room: 100, attempts: 10, pods: 10},
		{name: "quota of 3", n: 10, room: 3, attempts: 7, pods: 3, wantErr: true},
		{name: "first fails", n: 10, room: 0, attempts: 1, pods: 0, wantErr: true},
		{name: "quota of 1", n: 10, room: 1, attempts: 3, pods: 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			var attempts, created atomic.Int64
			kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				attempts.Add(1)
				if created.Add(1) > int64(tc.room) {
					return true, nil, errors.New("exceeded quota")
				}
				return false, nil, nil
			})
			cs := testCloneSet(int32(tc.n))
			data, err := revision.TemplatePatch(&cs.Spec.Template)
			require.NoError(t, err)
			rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: updateRev}, Data: runtime.RawExtension{Raw: data}}
			c := &Controller{
				Base: &workload.Base{
					Kube:       kube,
					PodControl: podclient.New(kube),
					Pods:       cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID}),
					Recorder:   record.NewFakeRecorder(100),
				},
				scaleExp: expectations.NewScale[types.NamespacedName](),
			}
			st := &syncState{key: types.NamespacedName{Namespace: "ns", Name: "web"}, cs: cs, now: now, Revisions: workload.Revisions{Current: rev, Update: rev}, deleted: sets.New[string]()}
			err = c.createPods(t.Context(), st, tc.n, 0)
			assert.Equal(t, tc.wantErr, err != nil, "error: %v", err)
			assert.Equal(t, int64(tc.attempts), attempts.Load(), "create requests")
			list, err := kube.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			assert.Len(t, list.Items, tc.pods)
			for _, p := range list.Items {
				assert.Equal(t, fmt.Sprintf("web-%s", p.Labels["apps.kruise.io/cloneset-instance-id"]), p.Name)
				assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}, p.Spec.ReadinessGates)
			}
			// Every failed create released its expectation; successful ones wait for the informer.
			ok, _ := c.scaleExp.Satisfied(st.key)
			assert.Equal(t, tc.pods == 0, ok)
			assert.Len(t, c.scaleExp.Pending(st.key, expectations.Create), tc.pods)
		})
	}
}
