package predownload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// rev builds revision name of a template with one container per image
// ("c0", "c1", …), mutated by opts.
func rev(t *testing.T, name string, images []string, opts ...func(*corev1.PodTemplateSpec)) *appsv1.ControllerRevision {
	t.Helper()
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	for i, img := range images {
		tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: img})
	}
	for _, o := range opts {
		o(tmpl)
	}
	data, err := revision.TemplatePatch(tmpl)
	require.NoError(t, err)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{revision.HashLabel: revision.ShortHash(name)}},
		Data:       runtime.RawExtension{Raw: data},
	}
}

func withLabel(r *appsv1.ControllerRevision, k string) *appsv1.ControllerRevision {
	r = r.DeepCopy()
	r.Labels[k] = "true"
	return r
}

func TestDecide(t *testing.T) {
	v1 := rev(t, "web-aaa", []string{"app:v1", "side:v1"})
	v2 := rev(t, "web-bbb", []string{"app:v2", "side:v1"})
	both := rev(t, "web-ccc", []string{"app:v2", "side:v2"})
	recreate := rev(t, "web-ddd", []string{"app:v2", "side:v1"}, func(p *corev1.PodTemplateSpec) {
		p.Spec.Volumes = []corev1.Volume{{Name: "x"}}
	})
	metaOnly := rev(t, "web-eee", []string{"app:v1", "side:v1"}, func(p *corev1.PodTemplateSpec) { p.Labels["new"] = "x" })

	// base: 10 replicas, maxUnavailable 20%, status already at web-bbb.
	base := func(mut ...func(*Input)) Input {
		in := Input{Current: v1, Update: v2, Replicas: 10, MaxUnavailable: intstr.FromString("20%"), StatusUpdateRevision: "web-bbb"}
		for _, m := range mut {
			m(&in)
		}
		return in
	}
	minReady := func(v string) func(*Input) {
		return func(in *Input) { in.Annotations = map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: v} }
	}
	ready := func(n int32) func(*Input) { return func(in *Input) { in.UpdatedReadyReplicas = n } }

	cases := []struct {
		name   string
		in     Input
		want   Action
		images map[string]string
	}{
		{"converged", base(func(in *Input) { in.Update = v1 }), DeleteJobs, nil},
		{"changed image only", base(), Create, map[string]string{"c0": "app:v2"}},
		{"two images", base(func(in *Input) { in.Update = both }), Create, map[string]string{"c0": "app:v2", "c1": "side:v2"}},
		{"metadata only: created, no job (as OpenKruise)", base(func(in *Input) { in.Update = metaOnly }), Create, nil},
		{"already created", base(func(in *Input) { in.Update = withLabel(v2, pub.ImagePreDownloadCreatedKey) }), Wait, nil},
		{"already ignored", base(func(in *Input) { in.Update = withLabel(v2, pub.ImagePreDownloadIgnoredKey) }), Wait, nil},
		{"recreate", base(func(in *Input) { in.Recreate = true }), Ignore, nil},
		{"3 replicas", base(func(in *Input) { in.Replicas = 3 }), Ignore, nil},
		{"4 replicas", base(func(in *Input) { in.Replicas = 4 }), Create, map[string]string{"c0": "app:v2"}},
		{"not in place", base(func(in *Input) { in.Update = recreate }), Ignore, nil},

		// maxUnavailable is rounded down: 4 × 80% = 3.2 → 3 < 4, not one batch.
		{"maxUnavailable 80% of 4 rounds down", base(func(in *Input) { in.Replicas = 4; in.MaxUnavailable = intstr.FromString("80%") }), Create, map[string]string{"c0": "app:v2"}},
		{"maxUnavailable 99% of 10 rounds down", base(func(in *Input) { in.MaxUnavailable = intstr.FromString("99%") }), Create, map[string]string{"c0": "app:v2"}},
		{"maxUnavailable 100%", base(func(in *Input) { in.MaxUnavailable = intstr.FromString("100%") }), Ignore, nil},
		{"maxUnavailable = replicas", base(func(in *Input) { in.MaxUnavailable = intstr.FromInt32(10) }), Ignore, nil},
		{"maxUnavailable 100% but a partition", base(func(in *Input) { in.MaxUnavailable = intstr.FromString("100%"); in.Partition = 1 }), Create, map[string]string{"c0": "app:v2"}},
		{"malformed maxUnavailable counts 0", base(func(in *Input) { in.MaxUnavailable = intstr.FromString("x") }), Create, map[string]string{"c0": "app:v2"}},

		{"min ready 2, 1 ready", base(minReady("2"), ready(1)), Wait, nil},
		{"min ready 2, 2 ready", base(minReady("2"), ready(2)), Create, map[string]string{"c0": "app:v2"}},
		// 10 × 15% = 1.5 → 2.
		{"min ready 15% rounds up, 1 ready", base(minReady("15%"), ready(1)), Wait, nil},
		{"min ready 15% rounds up, 2 ready", base(minReady("15%"), ready(2)), Create, map[string]string{"c0": "app:v2"}},
		{"min ready malformed counts 0", base(minReady("lots")), Create, map[string]string{"c0": "app:v2"}},
		// status.updatedReadyReplicas is about another revision: it counts 0.
		{"stale status revision resets the count", base(minReady("2"), ready(5), func(in *Input) { in.StatusUpdateRevision = "web-aaa" }), Wait, nil},
		{"stale status, no minimum", base(ready(5), func(in *Input) { in.StatusUpdateRevision = "web-aaa" }), Create, map[string]string{"c0": "app:v2"}},
		// The minimum is checked before the recorded decision and the ignore rules.
		{"min ready unmet, recreate: wait, not ignore", base(minReady("2"), func(in *Input) { in.Recreate = true }), Wait, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			assert.Equal(t, tc.want, d.Action, d.Reason)
			assert.Equal(t, tc.images, d.Images)
		})
	}
}

func TestMinUpdatedReadyPods(t *testing.T) {
	for v, want := range map[string]int{"": 0, "3": 3, "0": 0, "50%": 5, "11%": 2, "100%": 10, "x": 0, "1.5": 0} {
		ann := map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: v}
		assert.Equal(t, want, MinUpdatedReadyPods(ann, 10), v)
	}
	assert.Equal(t, 0, MinUpdatedReadyPods(nil, 10))
}

func testOwner(ann map[string]string) *appsv1alpha1.CloneSet {
	return &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Annotations: ann}}
}

var cloneSetKind = appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet")

func TestNewJob(t *testing.T) {
	update := rev(t, "web-bbb", nil)
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "db"}, Annotations: map[string]string{"note": "x"}},
		Spec:       corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg-a"}, {Name: "reg-b"}}},
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	owner := testOwner(nil)
	w := Workload{Owner: owner, Kind: cloneSetKind, Selector: sel, Template: tmpl}

	job := NewJob(w, update, "main", "app:v2")
	wantLabels := map[string]string{"app": "web", "tier": "db", revision.HashLabel: "bbb"}
	assert.Equal(t, "web-bbb-main", job.Name)
	assert.Equal(t, "ns", job.Namespace)
	assert.Equal(t, wantLabels, job.Labels)
	require.Len(t, job.OwnerReferences, 1)
	assert.True(t, metav1.IsControlledBy(job, owner))
	assert.Equal(t, "CloneSet", job.OwnerReferences[0].Kind)
	assert.Equal(t, "app:v2", job.Spec.Image)
	assert.Equal(t, []string{"reg-a", "reg-b"}, job.Spec.PullSecrets)
	assert.Equal(t, metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web-bbb", "bbb"},
		}},
	}, job.Spec.PodSelector.LabelSelector)
	assert.Empty(t, sel.MatchExpressions, "the workload's selector is not modified")
	assert.Equal(t, intstr.FromInt32(1), *job.Spec.Parallelism)
	assert.Equal(t, int32(300), *job.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(1), *job.Spec.PullPolicy.BackoffLimit)
	assert.Equal(t, appsv1alpha1.Always, job.Spec.CompletionPolicy.Type)
	assert.Equal(t, int32(600), *job.Spec.CompletionPolicy.TTLSecondsAfterFinished)
	assert.Equal(t, wantLabels, job.Spec.SandboxConfig.Labels)
	assert.Equal(t, map[string]string{"note": "x"}, job.Spec.SandboxConfig.Annotations)

	w.Owner = testOwner(map[string]string{pub.ImagePreDownloadParallelismKey: "4", pub.ImagePreDownloadTimeoutSecondsKey: "60"})
	job = NewJob(w, update, "main", "app:v2")
	assert.Equal(t, intstr.FromInt32(4), *job.Spec.Parallelism)
	assert.Equal(t, int32(60), *job.Spec.PullPolicy.TimeoutSeconds)

	w.Owner = testOwner(map[string]string{pub.ImagePreDownloadParallelismKey: "many", pub.ImagePreDownloadTimeoutSecondsKey: "1m"})
	job = NewJob(w, update, "main", "app:v2")
	assert.Equal(t, intstr.FromInt32(1), *job.Spec.Parallelism)
	assert.Equal(t, int32(300), *job.Spec.PullPolicy.TimeoutSeconds)

	w.Template = &corev1.PodTemplateSpec{}
	job = NewJob(w, update, "main", "app:v2")
	assert.Nil(t, job.Spec.PullSecrets)
	assert.Nil(t, job.Spec.SandboxConfig.Annotations)
	assert.Equal(t, map[string]string{revision.HashLabel: "bbb"}, job.Labels)

	long := rev(t, strings.Repeat("x", 240)+"-hash", nil)
	assert.Len(t, JobName(long, "container"), 253)
}
