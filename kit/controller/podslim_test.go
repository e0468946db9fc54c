package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// fullPod is a CloneSet pod as the API server serves it after a kubelet
// started it: the fields a slim cache keeps and many it drops.
func fullPod(name string) *corev1.Pod {
	ts := metav1.NewTime(time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "bench", GenerateName: "web-", UID: "uid-" + "name", ResourceVersion: "42",
			CreationTimestamp: ts,
			Labels: map[string]string{"app": "web", pub.ControllerRevisionHashLabelKey: "web-5f7b8c9d4",
				pub.LifecycleStateKey: string(pub.LifecycleStateNormal)},
			Annotations:     map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"web-5f7b8c9d4","updateTimestamp":"2026-11-24T01:00:00Z"}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptr.To(true)}},
			Finalizers:      []string{"example.com/hold"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}},
			Containers: []corev1.Container{{
				Name: "main", Image: "nginx:1.27",
				Env:            []corev1.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: pub.ContainerLaunchPriorityEnvName, Value: "10"}},
				Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}},
			}},
			InitContainers:  []corev1.Container{{Name: "init", Image: "busybox"}},
			Volumes:         []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations:     []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.7", HostIP: "10.0.0.1", StartTime: &ts, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts},
				{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: ts},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", Image: "nginx:1.27", ImageID: "sha256:abc", ContainerID: "containerd://1", Ready: true, RestartCount: 2,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}, Started: ptr.To(true),
			}},
		},
	}
}

func TestSlimPodKeepsWhatIsRead(t *testing.T) {
	full := fullPod("web-a")
	orig := full.DeepCopy()
	got, err := SlimPod(full)
	require.NoError(t, err)
	slim := got.(*corev1.Pod)
	assert.Same(t, full, slim, "slimmed in place")

	want := orig.DeepCopy()
	want.ManagedFields = nil
	want.Spec = corev1.PodSpec{
		NodeName: "node-1", ReadinessGates: orig.Spec.ReadinessGates,
		Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27",
			Env: []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"}}}},
	}
	want.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "10.0.0.7", Conditions: orig.Status.Conditions,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "nginx:1.27", ImageID: "sha256:abc",
			ContainerID: "containerd://1", Ready: true, RestartCount: 2}},
	}
	assert.Equal(t, want, slim)

	// A second pass (client-go's watch-list stream is transformed twice)
	// changes nothing.
	again, err := SlimPod(slim)
	require.NoError(t, err)
	assert.Same(t, slim, again)
	assert.Equal(t, want, again)

	// Two pods of one workload share their repeated strings.
	other, err := SlimPod(fullPod("web-b"))
	require.NoError(t, err)
	o := other.(*corev1.Pod)
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	assert.True(t, same(slim.Namespace, o.Namespace), "namespace")
	assert.True(t, same(slim.Labels["app"], o.Labels["app"]), "label value")
	assert.True(t, same(slim.Spec.NodeName, o.Spec.NodeName), "node name")
	assert.True(t, same(slim.Spec.Containers[0].Image, o.Spec.Containers[0].Image), "image")
	assert.True(t, same(slim.OwnerReferences[0].Name, o.OwnerReferences[0].Name), "owner")
}

func TestSlimPodPassesOthersThrough(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: fullPod("p")}
	got, err := SlimPod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, got)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	got, err = SlimPod(cm)
	require.NoError(t, err)
	assert.Same(t, cm, got)
}

// applyPatch is what the API server does with a strategic-merge patch.
func applyPatch(t *testing.T, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(pod)
	require.NoError(t, err)
	doc, err = strategicpatch.StrategicMergePatch(doc, patch, corev1.Pod{})
	require.NoError(t, err)
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(doc, &out))
	return &out
}

func TestPodPatchFromSlimPod(t *testing.T) {
	// As served: times decoded the way applyPatch decodes them.
	full := applyPatch(t, fullPod("web-a"), []byte("{}"))
	obj, err := SlimPod(full.DeepCopy())
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)
	require.Nil(t, slim.Spec.Volumes)

	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		check  func(t *testing.T, got *corev1.Pod)
	}{
		{"image in place", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" },
			func(t *testing.T, got *corev1.Pod) {
				want := full.DeepCopy()
				want.Spec.Containers[0].Image = "nginx:1.28"
				assert.Equal(t, want.Spec, got.Spec, "env, mounts, probes, volumes kept")
			}},
		{"label set, annotation removed", func(p *corev1.Pod) {
			p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
			delete(p.Annotations, pub.InPlaceUpdateStateKey)
		}, func(t *testing.T, got *corev1.Pod) {
			assert.Equal(t, string(pub.LifecycleStateUpdating), got.Labels[pub.LifecycleStateKey])
			assert.NotContains(t, got.Annotations, pub.InPlaceUpdateStateKey)
			assert.Equal(t, full.Spec, got.Spec)
		}},
		{"condition changed", func(p *corev1.Pod) {
			p.Status.Conditions[1].Status = corev1.ConditionFalse
			p.Status.Conditions[1].Reason = "Held"
		}, func(t *testing.T, got *corev1.Pod) {
			assert.Equal(t, corev1.ConditionFalse, got.Status.Conditions[1].Status)
			assert.Equal(t, "Held", got.Status.Conditions[1].Reason)
			assert.Equal(t, corev1.ConditionTrue, got.Status.Conditions[0].Status)
			assert.Equal(t, full.Status.ContainerStatuses, got.Status.ContainerStatuses, "states, started kept")
			assert.Equal(t, full.Status.HostIP, got.Status.HostIP)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := slim.DeepCopy()
			tc.change(next)
			patch, err := PodPatch(slim, next)
			require.NoError(t, err)
			require.NotNil(t, patch)
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(patch, &meta))
			assert.Equal(t, "42", meta.Metadata.ResourceVersion, "guarded by the cached resourceVersion")
			tc.check(t, applyPatch(t, full, patch))
		})
	}

	patch, err := PodPatch(slim, slim.DeepCopy())
	require.NoError(t, err)
	assert.Nil(t, patch, "no change, no patch")
}

func TestPatchPod(t *testing.T) {
	ctx := context.Background()
	full := fullPod("web-a")
	client := fake.NewClientset(full.DeepCopy())
	next := full.DeepCopy()
	next.Status.Conditions[1].Status = corev1.ConditionFalse
	out, err := PatchPod(ctx, client, full, next, "status")
	require.NoError(t, err)
	assert.Equal(t, corev1.ConditionFalse, out.Status.Conditions[1].Status)
	require.Len(t, client.Actions(), 1)
	a := client.Actions()[0].(k8stesting.PatchAction)
	assert.Equal(t, "status", a.GetSubresource())

	client.ClearActions()
	same, err := PatchPod(ctx, client, full, full.DeepCopy())
	require.NoError(t, err)
	assert.Same(t, full, same)
	assert.Empty(t, client.Actions(), "nothing to write: no request")
}

// BenchmarkCachedPodBytes reports the heap a cached pod costs, decoded as
// the informer receives it, with managedFields stripped (the transform
// before SlimPod) and slimmed.
func BenchmarkCachedPodBytes(b *testing.B) {
	const n = 2000
	raw, err := json.Marshal(fullPod("web"))
	require.NoError(b, err)
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
	}{{"stripManagedFields", StripManagedFields}, {"slim", SlimPod}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				keep := make([]any, n)
				before := heapInUse()
				for i := range keep {
					p := &corev1.Pod{}
					if err := json.Unmarshal(raw, p); err != nil {
						b.Fatal(err)
					}
					p.Name = fmt.Sprintf("web-%d", i)
					if keep[i], err = tc.transform(p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(heapInUse()-before)/n, "B/cached-pod")
				runtime.KeepAlive(keep)
			}
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkPodPatch is the cost of one pod write's patch (the pod loop's
// first write: two conditions and a label) on a slimmed pod.
func BenchmarkPodPatch(b *testing.B) {
	obj, err := SlimPod(fullPod("web-a"))
	require.NoError(b, err)
	pod := obj.(*corev1.Pod)
	next := pod.DeepCopy()
	next.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PodPatch(pod, next); err != nil {
			b.Fatal(err)
		}
	}
}
