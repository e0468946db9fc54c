package controller

import (
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
	"k8s.io/apimachinery/pkg/types"
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
			Name: name, Namespace: "bench", GenerateName: "web-", UID: types.UID("uid-" + name), ResourceVersion: "42",
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
				Env: []corev1.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: pub.ContainerLaunchPriorityEnvName, Value: "10"},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "VERSION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}},
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
			Env: []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"},
				{Name: "VERSION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}}}},
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
