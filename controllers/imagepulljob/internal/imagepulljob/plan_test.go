package imagepulljob

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func TestImageNameTag(t *testing.T) {
	for _, c := range []struct{ in, name, tag, ref string }{
		{"nginx", "nginx", "latest", "nginx:latest"},
		{"nginx:1.25", "nginx", "1.25", "nginx:1.25"},
		{"docker.io/library/nginx:1.25", "nginx", "1.25", "nginx:1.25"},
		{"127.0.0.1:5050/flotilla/busybox:v2", "127.0.0.1:5050/flotilla/busybox", "v2", "127.0.0.1:5050/flotilla/busybox:v2"},
		{"busybox:v1@sha256:" + sha, "busybox", "sha256:" + sha, "busybox@sha256:" + sha},
	} {
		name, tag, err := imageNameTag(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.name, name, c.in)
		assert.Equal(t, c.tag, tag, c.in)
		assert.Equal(t, c.ref, PullReference(name, tag), c.in)
	}
	_, _, err := imageNameTag("Not A Reference")
	assert.ErrorContains(t, err, "spec.image")
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestTagPullPolicy(t *testing.T) {
	noJitter := func(int32) int32 { return 0 }
	for _, c := range []struct {
		name     string
		spec     appsv1beta1.ImagePullJobSpec
		ttl      int32
		deadline *int64
	}{
		{name: "Always, defaults: timeout × backoff", spec: spec(appsv1beta1.Always, nil, nil, nil), ttl: 1800},
		{name: "Always, TTL", spec: spec(appsv1beta1.Always, ptr.To[int32](60), ptr.To[int64](100), nil), ttl: 60, deadline: ptr.To[int64](100)},
		{name: "Always, deadline", spec: spec(appsv1beta1.Always, nil, ptr.To[int64](100), nil), ttl: 100, deadline: ptr.To[int64](100)},
		{name: "Always, own timeout", spec: spec(appsv1beta1.Always, nil, nil, &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](10), BackoffLimit: ptr.To[int32](2)}), ttl: 20},
		{name: "Never: 24h, 1800s", spec: spec(appsv1beta1.Never, ptr.To[int32](5), ptr.To[int64](5), nil), ttl: 24*3600 - 600, deadline: ptr.To[int64](1800)},
		{name: "Never, long timeout", spec: spec(appsv1beta1.Never, nil, nil, &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](3600)}), ttl: 24*3600 - 600, deadline: ptr.To[int64](3600)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tagPullPolicy(&c.spec, noJitter)
			assert.Equal(t, c.ttl, *p.TTLSecondsAfterFinished)
			assert.Equal(t, c.deadline, p.ActiveDeadlineSeconds)
			assert.NotNil(t, p.TimeoutSeconds)
			assert.NotNil(t, p.BackoffLimit)
		})
	}
}

func spec(typ appsv1beta1.CompletionPolicyType, ttl *int32, deadline *int64, pp *appsv1beta1.PullPolicy) appsv1beta1.ImagePullJobSpec {
	s := appsv1beta1.ImagePullJobSpec{Image: "nginx"}
	s.CompletionPolicy = appsv1beta1.CompletionPolicy{Type: typ, TTLSecondsAfterFinished: ttl, ActiveDeadlineSeconds: deadline}
	s.PullPolicy = pp
	return s
}

func TestParallelismAndNextNodes(t *testing.T) {
	s := appsv1beta1.ImagePullJobSpec{}
	assert.Equal(t, 1, parallelism(&s, 10), "default 1")
	s.Parallelism = ptr.To(intstr.FromInt32(4))
	assert.Equal(t, 4, parallelism(&s, 10))
	s.Parallelism = ptr.To(intstr.FromString("25%"))
	assert.Equal(t, 3, parallelism(&s, 10), "a percentage of desired, rounded up")

	nodes := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		active, par, max int
		next             []string
		more             bool
	}{
		{active: 0, par: 2, max: 50, next: []string{"a", "b"}},
		{active: 2, par: 2, max: 50},
		{active: 3, par: 2, max: 50},
		{active: 0, par: 10, max: 50, next: nodes},
		{active: 0, par: 10, max: 3, next: []string{"a", "b", "c"}, more: true},
	} {
		next, more := nextNodes(nodes, c.active, c.par, c.max)
		assert.Equal(t, c.next, next, "%+v", c)
		assert.Equal(t, c.more, more, "%+v", c)
	}
}

func job(id string) *appsv1beta1.ImagePullJob {
	j := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-" + id, UID: uid(id)}}
	j.Spec.Image = "nginx:1.25"
	j.Spec.ImagePullPolicy = appsv1beta1.PullIfNotPresent
	return j
}

func TestAddJobTag(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	earlier := metav1.NewTime(time.Unix(10, 0))
	policy := &appsv1beta1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](5)}
	secret := appsv1beta1.ReferenceObject{Namespace: "flotilla-node", Name: "s-1", Mode: "batch"}
	a, b := job("a"), job("b")

	t.Run("new tag after the version the node reported", func(t *testing.T) {
		ni := &appsv1beta1.NodeImage{}
		ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1.25", Version: 4}}}}
		require.True(t, addJobTag(ni, a, "nginx", "1.25", []appsv1beta1.ReferenceObject{secret}, policy, now))
		img := ni.Spec.Images["nginx"]
		require.Len(t, img.Tags, 1)
		assert.Equal(t, int64(5), img.Tags[0].Version)
		assert.Equal(t, &now, img.Tags[0].CreatedAt)
		assert.Equal(t, policy, img.Tags[0].PullPolicy)
		assert.Equal(t, []corev1.ObjectReference{ownerRef(a)}, img.Tags[0].OwnerReferences)
		assert.Equal(t, []appsv1beta1.ReferenceObject{secret}, img.PullSecrets)
		assert.False(t, addJobTag(ni, a, "nginx", "1.25", []appsv1beta1.ReferenceObject{secret}, policy, now), "already there: nothing to write")
	})
	t.Run("another job's tag: a new round", func(t *testing.T) {
		ni := &appsv1beta1.NodeImage{Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
			{Tag: "1.24", Version: 1, CreatedAt: &earlier},
			{Tag: "1.25", Version: 2, CreatedAt: &earlier, OwnerReferences: []corev1.ObjectReference{ownerRef(b)}},
		}}}}}
		b.Spec.ImagePullPolicy = appsv1beta1.PullAlways
		a.Spec.ImagePullPolicy = appsv1beta1.PullAlways
		require.True(t, addJobTag(ni, a, "nginx", "1.25", nil, policy, now))
		tag := ni.Spec.Images["nginx"].Tags[1]
		assert.Equal(t, int64(3), tag.Version)
		assert.Equal(t, &now, tag.CreatedAt)
		assert.Equal(t, []corev1.ObjectReference{ownerRef(b), ownerRef(a)}, tag.OwnerReferences)
		assert.Equal(t, appsv1beta1.PullAlways, tag.ImagePullPolicy)
		assert.Equal(t, int64(1), ni.Spec.Images["nginx"].Tags[0].Version, "other tags untouched")
	})
	t.Run("a missing secret is added to an owned tag", func(t *testing.T) {
		ni := &appsv1beta1.NodeImage{Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
			{Tag: "1.25", Version: 2, CreatedAt: &earlier, OwnerReferences: []corev1.ObjectReference{ownerRef(a)}},
		}}}}}
		require.True(t, addJobTag(ni, a, "nginx", "1.25", []appsv1beta1.ReferenceObject{secret}, policy, now))
		assert.Equal(t, int64(2), ni.Spec.Images["nginx"].Tags[0].Version, "no new round")
		assert.Equal(t, []appsv1beta1.ReferenceObject{secret}, ni.Spec.Images["nginx"].PullSecrets)
	})
}

func nodeImage(name string, labels map[string]string) *appsv1beta1.NodeImage {
	return &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestChooseNodeImages(t *testing.T) {
	byName := map[string]*appsv1beta1.NodeImage{
		"n1": nodeImage("n1", map[string]string{"pool": "a"}),
		"n2": nodeImage("n2", map[string]string{"pool": "b"}),
		"n3": nodeImage("n3", map[string]string{"pool": "a"}),
	}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []*corev1.Pod{pod("p1", "n3", corev1.PodRunning), pod("p2", "n3", corev1.PodRunning), pod("p3", "n2", corev1.PodSucceeded),
		pod("p4", "", corev1.PodPending), pod("p5", "gone", corev1.PodRunning)}
	for _, c := range []struct {
		name string
		spec appsv1beta1.ImagePullJobSpec
		want []string
	}{
		{name: "no selector: all", want: []string{"n1", "n2", "n3"}},
		{name: "names win over labels", spec: selector([]string{"n2", "n9", "n2"}, map[string]string{"pool": "a"}), want: []string{"n2"}},
		{name: "labels", spec: selector(nil, map[string]string{"pool": "a"}), want: []string{"n1", "n3"}},
		{name: "empty selector: all", spec: selector(nil, nil), want: []string{"n1", "n2", "n3"}},
		{name: "pods: active, scheduled, on a known node, once", spec: appsv1beta1.ImagePullJobSpec{ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
			PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}, want: []string{"n3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := chooseNodeImages(&c.spec, byName, pods)
			require.NoError(t, err)
			var names []string
			for _, ni := range got {
				names = append(names, ni.Name)
			}
			assert.Equal(t, c.want, names)
			if c.spec.PodSelector == nil {
				for _, ni := range byName {
					assert.Equal(t, slices.Contains(c.want, ni.Name), selectsNodeImage(&c.spec, ni), "selectsNodeImage(%s)", ni.Name)
				}
			}
		})
	}
}

func selector(names []string, labels map[string]string) appsv1beta1.ImagePullJobSpec {
	s := appsv1beta1.ImagePullJobSpec{}
	s.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: names, LabelSelector: metav1.LabelSelector{MatchLabels: labels}}
	return s
}

func TestCopySecrets(t *testing.T) {
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte("{}")}}
	cp := claimCopy(src, nil, "flotilla-node", "team/j1")
	require.NotNil(t, cp)
	assert.Equal(t, "flotilla-node", cp.Namespace)
	assert.Equal(t, copyName("team", "regcred"), cp.Name)
	assert.NotEqual(t, copyName("team", "regcred"), copyName("team2", "regcred"), "sources never share a copy")
	assert.Equal(t, map[string]string{SecretAnnotationSourceKey: "team/regcred", SecretAnnotationReferences: "team/j1", SecretAnnotationMode: "batch"}, cp.Annotations)
	assert.Nil(t, claimCopy(src, cp, "flotilla-node", "team/j1"), "up to date")

	cp2 := claimCopy(src, cp, "flotilla-node", "team/j0")
	require.NotNil(t, cp2)
	assert.Equal(t, "team/j0,team/j1", cp2.Annotations[SecretAnnotationReferences])
	changed := src.DeepCopy()
	changed.Data[".dockerconfigjson"] = []byte(`{"auths":{}}`)
	cp3 := claimCopy(changed, cp2, "flotilla-node", "team/j0")
	require.NotNil(t, cp3, "the source's data changed")
	assert.Equal(t, changed.Data, cp3.Data)

	out, remove := releaseCopy(cp2, "team/j1")
	assert.False(t, remove)
	assert.Equal(t, "team/j0", out.Annotations[SecretAnnotationReferences])
	out, remove = releaseCopy(out, "team/j0")
	assert.Nil(t, out)
	assert.True(t, remove, "no job uses it any more")
	out, remove = releaseCopy(cp2, "team/other")
	assert.Nil(t, out)
	assert.False(t, remove, "not this job's")
}
