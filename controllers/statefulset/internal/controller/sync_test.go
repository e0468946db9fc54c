package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// One sync of the update path, over fake clientsets: which pods it deletes
// (recreate) or updates in place, given the partition, maxUnavailable,
// paused, OnDelete, specified-delete and the pod update policy. The set has
// 4 pods at the old revision and its template just changed, unless the case
// says otherwise.
func TestSyncRollOut(t *testing.T) {
	type fx = *syncFixture
	cases := []struct {
		name   string
		opts   []setOpt
		change func(*corev1.PodTemplateSpec)
		// setup adjusts the fixture after the change; pods 0-3 are at the old
		// revision before it runs.
		setup func(f fx)
		want  []string
		check func(t *testing.T, f fx)
	}{
		{name: "recreate, highest ordinal first, one at a time", want: []string{"delete web-3"}},
		{name: "the partition keeps the lowest ordinals",
			opts:  []setOpt{withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To(int32(2)) })},
			setup: func(f fx) { f.addPods(f.rev(1), 3) },
			want:  []string{"delete web-2"}},
		{name: "nothing left above the partition",
			opts:  []setOpt{withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To(int32(2)) })},
			setup: func(f fx) { f.addPods(f.rev(1), 2, 3) },
			want:  []string{}},
		{name: "maxUnavailable 2",
			opts: []setOpt{parallelPods, withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.MaxUnavailable = ptr.To(intstr.FromInt32(2)) })},
			want: []string{"delete web-2", "delete web-3"}},
		{name: "maxUnavailable 50% of 4",
			opts: []setOpt{parallelPods, withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
				r.MaxUnavailable = ptr.To(intstr.FromString("50%"))
			})},
			want: []string{"delete web-2", "delete web-3"}},
		{name: "maxUnavailable 40% of 4 rounds down to 1",
			opts: []setOpt{parallelPods, withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
				r.MaxUnavailable = ptr.To(intstr.FromString("40%"))
			})},
			want: []string{"delete web-3"}},
		{name: "an unavailable pod uses up maxUnavailable, and is itself updated",
			setup: func(f fx) { f.pod(1).Status.Conditions[0].Status = corev1.ConditionFalse },
			opts:  []setOpt{parallelPods},
			want:  []string{"delete web-1"}},
		{name: "an updated pod not yet ready holds the rollout",
			setup: func(f fx) {
				f.addPods(f.rev(1), 3)
				f.pod(3).Status.Conditions[0].Status = corev1.ConditionFalse
			},
			want: []string{}},
		{name: "paused",
			opts: []setOpt{withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Paused = true })},
			want: []string{}},
		{name: "OnDelete updates nothing by itself",
			opts: []setOpt{func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }},
			want: []string{}},
		{name: "OnDelete deletes a specified-delete pod",
			opts:  []setOpt{func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }},
			setup: func(f fx) { f.pod(1).Labels[pub.SpecifiedDeleteKey] = "true" },
			want:  []string{"delete web-1"}},
		{name: "specified-delete ignores the partition and comes first",
			opts:  []setOpt{withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To(int32(4)) })},
			setup: func(f fx) { f.pod(0).Labels[pub.SpecifiedDeleteKey] = "true" },
			want:  []string{"delete web-0"}},
		{name: "specified-delete without a template change",
			change: func(*corev1.PodTemplateSpec) {},
			setup:  func(f fx) { f.pod(2).Labels[pub.SpecifiedDeleteKey] = "true" },
			want:   []string{"delete web-2"}},
		{name: "InPlaceIfPossible: an image change is applied in place",
			opts: []setOpt{inPlaceGate, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			want: []string{"inplace web-3", "status web-3"},
			check: func(t *testing.T, f fx) {
				p, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "web-3")
				require.NoError(t, err)
				pod := p.(*corev1.Pod)
				assert.Equal(t, "db:v2", pod.Spec.Containers[0].Image)
				assert.Equal(t, f.rev(1), pod.Labels[pub.ControllerRevisionHashLabelKey])
				assert.NotEmpty(t, pod.Annotations[pub.InPlaceUpdateStateKey])
			}},
		{name: "InPlaceIfPossible: a change that cannot be applied in place recreates",
			opts:   []setOpt{inPlaceGate, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			change: envChange,
			want:   []string{"delete web-3"}},
		{name: "InPlaceIfPossible: pods without the InPlaceUpdateReady gate are recreated",
			opts: []setOpt{podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			want: []string{"delete web-3"}},
		{name: "InPlaceOnly refuses to recreate: no write, a Warning, a condition, no retry",
			opts:   []setOpt{inPlaceGate, podUpdatePolicy(appsv1beta1.InPlaceOnlyPodUpdateStrategyType)},
			change: envChange,
			want:   []string{},
			check: func(t *testing.T, f fx) {
				assert.True(t, kitcontroller.IsPermanent(f.err), "permanent, not retried: %v", f.err)
				assert.True(t, f.event("Warning FailedUpdatePodInPlace"), "events: %v", f.events)
				s, err := f.client.Tracker().Get(appsv1beta1.SchemeGroupVersion.WithResource("statefulsets"), "ns", "web")
				require.NoError(t, err)
				found := false
				for _, c := range s.(*appsv1beta1.StatefulSet).Status.Conditions {
					found = found || (c.Type == appsv1beta1.FailedUpdatePod && c.Status == corev1.ConditionTrue)
				}
				assert.True(t, found, "FailedUpdatePod condition")
			}},
		{name: "InPlaceIfPossible: an annotation read by container env recreates (no node agent to restart it)",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["cfg"] = "v2" },
			want:   []string{"delete web-3"}},
		{name: "InPlaceOnly refuses an annotation read by container env",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceOnlyPodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["cfg"] = "v2" },
			want:   []string{},
			check: func(t *testing.T, f fx) {
				assert.True(t, kitcontroller.IsPermanent(f.err), "permanent, not retried: %v", f.err)
				assert.True(t, f.event("Warning FailedUpdatePodInPlace"), "events: %v", f.events)
			}},
		{name: "KruiseDaemon (so InPlaceUpdateEnvFromMetadata): InPlaceOnly applies an annotation read by container env in place",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceOnlyPodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["cfg"] = "v2" },
			setup: func(f fx) {
				f.gates = map[featuregate.Feature]bool{features.KruiseDaemon: true}
				recordedByAgent(f.pod(3))
			},
			want: []string{"inplace web-3", "status web-3"},
			check: func(t *testing.T, f fx) {
				require.NoError(t, f.err)
				p, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "web-3")
				require.NoError(t, err)
				pod := p.(*corev1.Pod)
				assert.Equal(t, "v2", pod.Annotations["cfg"])
				assert.Contains(t, pod.Annotations[pub.InPlaceUpdateStateKey], `"updateEnvFromMetadata":true`)
			}},
		{name: "KruiseDaemon: the agent's record on the API server, not in the cache yet: in place, not recreated",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["cfg"] = "v2" },
			setup: func(f fx) {
				f.gates = map[featuregate.Feature]bool{features.KruiseDaemon: true}
				f.prepare = func(kube *kubefake.Clientset) {
					live := f.pod(3).DeepCopy()
					recordedByAgent(live)
					require.NoError(f.t, kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), live, "ns"))
				}
			},
			want: []string{"inplace web-3", "status web-3"}},
		{name: "KruiseDaemon, but no node agent recorded the pod: InPlaceOnly refuses, as with the gate off",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceOnlyPodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["cfg"] = "v2" },
			setup:  func(f fx) { f.gates = map[featuregate.Feature]bool{features.KruiseDaemon: true} },
			want:   []string{},
			check: func(t *testing.T, f fx) {
				assert.True(t, kitcontroller.IsPermanent(f.err), "permanent, not retried: %v", f.err)
				assert.ErrorContains(t, f.err, inplace.NotInPlaceNoAgentRecord)
			}},
		{name: "InPlaceIfPossible: an annotation no env reads is applied in place",
			opts:   []setOpt{inPlaceGate, envReadsAnnotation, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType)},
			change: func(t *corev1.PodTemplateSpec) { t.Annotations["other"] = "x" },
			want:   []string{"inplace web-3", "status web-3"}},
		{name: "InPlaceOnly applies an image change in place",
			opts: []setOpt{inPlaceGate, podUpdatePolicy(appsv1beta1.InPlaceOnlyPodUpdateStrategyType)},
			want: []string{"inplace web-3", "status web-3"}},
		{name: "lifecycle preDelete hook: the pod is held in PreparingDelete, not deleted",
			opts: []setOpt{func(s *appsv1beta1.StatefulSet) {
				s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
			}},
			setup: func(f fx) { f.pod(3).Labels["hold"] = "true" },
			want:  []string{"patch web-3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, 4, tc.opts...)
			f.addPods(f.rev(0), 0, 1, 2, 3)
			change := tc.change
			if change == nil {
				change = image("db:v2")
			}
			f.rollTo(change)
			if tc.setup != nil {
				tc.setup(f)
			}
			got := f.run()
			if tc.check == nil {
				require.NoError(t, f.err)
			}
			assert.Equal(t, tc.want, got)
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

// The order of a recreate rollout across syncs, OrderedReady: the highest
// ordinal first; the next only once the replacement is Running and Ready.
func TestSyncRollOutOrder(t *testing.T) {
	f := newSyncFixture(t, 3)
	f.addPods(f.rev(0), 0, 1, 2)
	v2 := f.rollTo(image("db:v2"))
	var order []string
	for range 3 {
		got := f.run()
		require.NoError(t, f.err)
		require.Len(t, got, 1, "one pod per sync: %v", got)
		order = append(order, got[0])
		var o int
		_, err := fmtSscan(got[0], &o)
		require.NoError(t, err)
		// The replacement appears, not ready yet: nothing moves.
		f.addPods(v2, o)
		f.pod(o).Status.Conditions[0].Status = corev1.ConditionFalse
		assert.Equal(t, []string{}, f.run(), "waits for web-%d", o)
		f.pod(o).Status.Conditions[0].Status = corev1.ConditionTrue
	}
	assert.Equal(t, []string{"delete web-2", "delete web-1", "delete web-0"}, order)
	assert.Equal(t, []string{}, f.run(), "rollout complete")
}

// fmtSscan reads the ordinal out of "delete web-<n>".
func fmtSscan(write string, o *int) (int, error) {
	return fmt.Sscanf(write, "delete web-%d", o)
}

// Pre-download in a sync (gate PreDownloadImageForInPlaceUpdate, which
// KruiseDaemon=false forces off): an in-place rollout held by a partition
// creates the ImagePullJob and labels the update revision; a converged set
// deletes its jobs.
func TestSyncPreDownload(t *testing.T) {
	setup := func(t *testing.T, gates map[featuregate.Feature]bool) *syncFixture {
		f := newSyncFixture(t, 4, inPlaceGate, podUpdatePolicy(appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType),
			withRolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To(int32(3)) }))
		f.addPods(f.rev(0), 0, 1, 2, 3)
		f.rollTo(image("db:v2"))
		f.gates = gates
		return f
	}
	revisionPatches := func(f *syncFixture) []string {
		var out []string
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "patch" && a.GetResource().Resource == "controllerrevisions" {
				out = append(out, string(a.(clienttesting.PatchAction).GetPatch()))
			}
		}
		return out
	}

	f := setup(t, map[featuregate.Feature]bool{features.KruiseDaemon: true, features.PreDownloadImageForInPlaceUpdate: true})
	assert.Equal(t, []string{"inplace web-3", "status web-3"}, f.run())
	require.NoError(t, f.err)
	assert.Equal(t, []string{"create imagepulljobs", "update statefulsets/status"}, f.flotillaWrites())
	job := f.client.Actions()[0].(clienttesting.CreateAction).GetObject().(*appsv1alpha1.ImagePullJob)
	assert.Equal(t, f.rev(1)+"-main", job.Name)
	assert.Equal(t, "db:v2", job.Spec.Image)
	assert.Equal(t, []string{`{"metadata":{"labels":{"apps.kruise.io/pre-predownload-created":"true"}}}`}, revisionPatches(f))

	for name, gates := range map[string]map[featuregate.Feature]bool{
		"gate off":           {features.KruiseDaemon: true},
		"KruiseDaemon=false": {features.KruiseDaemon: false, features.PreDownloadImageForInPlaceUpdate: true},
	} {
		f := setup(t, gates)
		f.run()
		require.NoError(t, f.err)
		assert.Equal(t, []string{"update statefulsets/status"}, f.flotillaWrites(), name)
		assert.Empty(t, revisionPatches(f), name)
	}

	// Converged: the set's job goes.
	f = newSyncFixture(t, 4, inPlaceGate)
	f.addPods(f.rev(0), 0, 1, 2, 3)
	f.set.Status.UpdateRevision = f.rev(0)
	f.gates = map[featuregate.Feature]bool{features.KruiseDaemon: true, features.PreDownloadImageForInPlaceUpdate: true}
	f.extra = append(f.extra, &appsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "web-old-main", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(f.set, kindStatefulSet)}}})
	assert.Equal(t, []string{}, f.run())
	require.NoError(t, f.err)
	assert.Contains(t, f.flotillaWrites(), "delete imagepulljobs")
}

// envReadsAnnotation: the template's container reads annotation "cfg"
// through the downward API.
func envReadsAnnotation(s *appsv1beta1.StatefulSet) {
	s.Spec.Template.Annotations = map[string]string{"cfg": "v1"}
	s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CFG", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['cfg']"}}}}
}

// recordedByAgent gives pod the annotation a node agent writes once it has recorded the pod's containers.
func recordedByAgent(pod *corev1.Pod) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[pub.RuntimeContainerMetaKey] = `{"containers":[]}`
}
