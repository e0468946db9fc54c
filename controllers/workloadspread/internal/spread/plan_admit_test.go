package spread

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func st(name string, missing int32) appsv1alpha1.WorkloadSpreadSubsetStatus {
	return appsv1alpha1.WorkloadSpreadSubsetStatus{Name: name, MissingReplicas: missing}
}

func unschedulable(s appsv1alpha1.WorkloadSpreadSubsetStatus) appsv1alpha1.WorkloadSpreadSubsetStatus {
	s.Conditions = []appsv1alpha1.WorkloadSpreadSubsetCondition{{Type: appsv1alpha1.SubsetSchedulable, Status: corev1.ConditionFalse}}
	return s
}

func TestAdmit(t *testing.T) {
	recorded := st("a", 1)
	recorded.CreatingPods = map[string]metav1.Time{"p": metav1.NewTime(t0)}
	cases := []struct {
		name        string
		in          []appsv1alpha1.WorkloadSpreadSubsetStatus
		op          Operation
		pod, subset string
		want        Admission
		wantMissing []int32
	}{
		{name: "first subset with room", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 0), st("b", 2), st("c", -1)}, op: Create, pod: "p",
			want: Admission{Subset: "b", Changed: true}, wantMissing: []int32{0, 1, -1}},
		{name: "unlimited subset: no write", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 0), st("c", -1)}, op: Create, pod: "p",
			want: Admission{Subset: "c"}, wantMissing: []int32{0, -1}},
		{name: "unschedulable subset skipped", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{unschedulable(st("a", 3)), st("b", 1)}, op: Create, pod: "p",
			want: Admission{Subset: "b", Changed: true}, wantMissing: []int32{3, 0}},
		{name: "all full: none", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 0), st("b", 0)}, op: Create, pod: "p",
			want: Admission{}, wantMissing: []int32{0, 0}},
		{name: "generateName pod gets a uid", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 1)}, op: Create, pod: "",
			want: Admission{Subset: "a", Changed: true, UID: "uid-1"}, wantMissing: []int32{0}},
		{name: "retried create already recorded", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{recorded}, op: Create, pod: "p",
			want: Admission{Subset: "a"}, wantMissing: []int32{1}},
		{name: "delete raises missing", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 0), st("b", 0)}, op: Delete, pod: "q", subset: "b",
			want: Admission{Subset: "b", Changed: true}, wantMissing: []int32{0, 1}},
		{name: "eviction of unknown subset", in: []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 0)}, op: Eviction, pod: "q", subset: "gone",
			want: Admission{}, wantMissing: []int32{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Admit(tc.in, tc.op, tc.pod, tc.subset, t0, func() string { return "uid-1" })
			assert.Equal(t, tc.want, got)
			var missing []int32
			for _, s := range tc.in {
				missing = append(missing, s.MissingReplicas)
			}
			assert.Equal(t, tc.wantMissing, missing)
			if got.Changed && tc.op == Create {
				key := tc.pod
				if key == "" {
					key = got.UID
				}
				assert.Contains(t, byName(tc.in, got.Subset).CreatingPods, key)
			}
			if got.Changed && tc.op != Create {
				assert.Contains(t, byName(tc.in, got.Subset).DeletingPods, tc.pod)
			}
		})
	}
}

func TestInitialStatuses(t *testing.T) {
	ws := &appsv1alpha1.WorkloadSpread{Spec: appsv1alpha1.WorkloadSpreadSpec{Subsets: []appsv1alpha1.WorkloadSpreadSubset{
		{Name: "a", MaxReplicas: ptrIOS(intstr.FromInt32(3))}, {Name: "b", MaxReplicas: ptrIOS(intstr.FromString("30%"))}, {Name: "c"}}}}
	got, err := InitialStatuses(ws, 10)
	require.NoError(t, err)
	assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{st("a", 3), st("b", 3), st("c", -1)}, got)
	got, err = InitialStatuses(ws, 11) // 30% of 11 rounds up
	require.NoError(t, err)
	assert.Equal(t, int32(4), got[1].MissingReplicas)
}

func ptrIOS(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestOrdinalSubset(t *testing.T) {
	ws := &appsv1alpha1.WorkloadSpread{Spec: appsv1alpha1.WorkloadSpreadSpec{Subsets: []appsv1alpha1.WorkloadSpreadSubset{
		{Name: "a", MaxReplicas: ptrIOS(intstr.FromInt32(2))}, {Name: "b", MaxReplicas: ptrIOS(intstr.FromInt32(1))}, {Name: "c"}}}}
	for pod, want := range map[string]string{"s-0": "a", "s-1": "a", "s-2": "b", "s-3": "c", "s-99": "c", "noordinal": "", "s-x": ""} {
		assert.Equal(t, want, OrdinalSubset(ws, pod), pod)
	}
	ws.Status.SubsetStatuses = []appsv1alpha1.WorkloadSpreadSubsetStatus{unschedulable(st("a", 0))}
	assert.Equal(t, "b", OrdinalSubset(ws, "s-0"), "unschedulable subset a skipped")
}

func TestInject(t *testing.T) {
	ws := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws"}, Spec: appsv1alpha1.WorkloadSpreadSpec{Subsets: []appsv1alpha1.WorkloadSpreadSubset{{
		Name:                       "zone-a",
		RequiredNodeSelectorTerm:   &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
		PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "ssd", Operator: corev1.NodeSelectorOpExists}}}}},
		Tolerations:                []corev1.Toleration{{Key: "elastic", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Patch: runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"subset":"zone-a"},"annotations":{"a":"b"}},` +
			`"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"2"}}}]}}`)},
	}}}}
	other := corev1.NodeSelectorRequirement{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		wantTerms [][]string // keys of each required term
	}{
		{name: "no affinity", pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}}}, wantTerms: [][]string{{"zone"}}},
		{name: "required term ANDed into each existing term", pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{other}}, {MatchExpressions: []corev1.NodeSelectorRequirement{other}}}}}}}},
			wantTerms: [][]string{{"arch", "zone"}, {"arch", "zone"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, Inject(tc.pod, ws, "zone-a", "u1"))
			na := tc.pod.Spec.Affinity.NodeAffinity
			var terms [][]string
			for _, term := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				var keys []string
				for _, e := range term.MatchExpressions {
					keys = append(keys, e.Key)
				}
				terms = append(terms, keys)
			}
			assert.Equal(t, tc.wantTerms, terms)
			assert.Len(t, na.PreferredDuringSchedulingIgnoredDuringExecution, 1)
			assert.Equal(t, "elastic", tc.pod.Spec.Tolerations[0].Key)
			assert.Equal(t, "zone-a", tc.pod.Labels["subset"])
			assert.Equal(t, "b", tc.pod.Annotations["a"])
			assert.True(t, tc.pod.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("2")))
			assert.Equal(t, "x", tc.pod.Spec.Containers[0].Image, "patch merges by container name")
			assert.JSONEq(t, `{"name":"ws","subset":"zone-a","uid":"u1"}`, tc.pod.Annotations[AnnotationKey])
		})
	}
	assert.Error(t, Inject(&corev1.Pod{}, ws, "missing", ""))
}
