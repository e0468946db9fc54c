package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

func set(name string, selector map[string]string, mutate ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: selector},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: name + "-side", Image: "side:1"}}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func handlers(t *testing.T, sets []*appsv1alpha1.SidecarSet, objs ...runtime.Object) *Handlers {
	t.Helper()
	setIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range sets {
		require.NoError(t, setIdx.Add(s))
	}
	nsIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	revIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet})
	cmIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			require.NoError(t, nsIdx.Add(o))
		case *appsv1.ControllerRevision:
			require.NoError(t, revIdx.Add(o))
		case *corev1.ConfigMap:
			require.NoError(t, cmIdx.Add(o))
		}
	}
	return &Handlers{
		Sets: appslisters.NewSidecarSetLister(setIdx), Namespaces: corelisters.NewNamespaceLister(nsIdx),
		Kube: fake.NewClientset(), Revisions: sidecarcontrol.RevisionIndexer{Indexer: revIdx},
		ConfigMaps: corelisters.NewConfigMapLister(cmIdx), SystemNamespace: "flotilla-system",
	}
}

func podRequest(t *testing.T, pod *corev1.Pod) kitwebhook.Request {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u", Operation: admissionv1.Create, Namespace: "team", Object: runtime.RawExtension{Raw: raw}}}
}

func newPod(lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: lbls},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
}

func applyPatch(t *testing.T, req kitwebhook.Request, r kitwebhook.Response) *corev1.Pod {
	t.Helper()
	out := req.Object.Raw
	if len(r.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(r.Patch)
		require.NoError(t, err)
		out, err = p.Apply(out)
		require.NoError(t, err)
	}
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(out, &pod))
	return &pod
}

func TestMutatePod(t *testing.T) {
	h := handlers(t, []*appsv1alpha1.SidecarSet{
		set("log", map[string]string{"app": "web"}),
		set("paused", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true }),
		set("elsewhere", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "other" }),
		set("labelled-ns", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
		}),
	}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"mesh": "on"}}})

	req := podRequest(t, newPod(map[string]string{"app": "web"}))
	r := h.MutatePod(context.Background(), req)
	require.True(t, r.Allowed, "%+v", r.Result)
	pod := applyPatch(t, req, r)
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"labelled-ns-side", "log-side", "app"}, names, "paused and other-namespace SidecarSets do not inject")
	assert.Equal(t, "labelled-ns,log", pod.Annotations[sidecarcontrol.InjectedListAnnotation])

	// No SidecarSet selects it: allowed, no patch.
	req = podRequest(t, newPod(map[string]string{"app": "db"}))
	r = h.MutatePod(context.Background(), req)
	assert.True(t, r.Allowed)
	assert.Nil(t, r.Patch)

	// Not a CREATE, or a subresource: untouched.
	req = podRequest(t, newPod(map[string]string{"app": "web"}))
	req.Operation = admissionv1.Update
	assert.Nil(t, h.MutatePod(context.Background(), req).Patch)
}

// The handler only wires: what Inject returns is what the response carries
// (stub injector), and an injection error denies the pod with its reason.
func TestMutatePodUsesInjector(t *testing.T) {
	h := handlers(t, []*appsv1alpha1.SidecarSet{set("log", map[string]string{"app": "web"})})
	var got []string
	h.Inject = func(pod *corev1.Pod, matched []*appsv1alpha1.SidecarSet, _ sidecarcontrol.RevisionSource, opts sidecarcontrol.Options) (*corev1.Pod, []string, error) {
		for _, s := range matched {
			got = append(got, s.Name)
		}
		out := pod.DeepCopy()
		out.Annotations = map[string]string{"stub": "yes"}
		return out, []string{"careful"}, nil
	}
	req := podRequest(t, newPod(map[string]string{"app": "web"}))
	r := h.MutatePod(context.Background(), req)
	assert.Equal(t, []string{"log"}, got)
	assert.Equal(t, []string{"careful"}, r.Warnings)
	assert.Equal(t, "yes", applyPatch(t, req, r).Annotations["stub"])

	h.Inject = func(*corev1.Pod, []*appsv1alpha1.SidecarSet, sidecarcontrol.RevisionSource, sidecarcontrol.Options) (*corev1.Pod, []string, error) {
		return nil, nil, errors.New("sidecarset log: spec.injectionStrategy.revision.revisionName: ControllerRevision \"x\" not found")
	}
	r = h.MutatePod(context.Background(), req)
	assert.False(t, r.Allowed)
	assert.Contains(t, r.Result.Message, "spec.injectionStrategy.revision.revisionName")
}

// A namespace the cache does not hold yet is read from the API server.
func TestMutatePodNamespaceNotCachedYet(t *testing.T) {
	h := handlers(t, []*appsv1alpha1.SidecarSet{set("mesh", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
	})})
	h.Kube = fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"mesh": "on"}}})
	req := podRequest(t, newPod(map[string]string{"app": "web"}))
	pod := applyPatch(t, req, h.MutatePod(context.Background(), req))
	assert.Equal(t, "mesh", pod.Annotations[sidecarcontrol.InjectedListAnnotation])
}

func setRequest(t *testing.T, op admissionv1.Operation, s, old *appsv1alpha1.SidecarSet) kitwebhook.Request {
	t.Helper()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	req := kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: op, Object: runtime.RawExtension{Raw: raw}}}
	if old != nil {
		req.OldObject.Raw, err = json.Marshal(old)
		require.NoError(t, err)
	}
	return req
}

func TestValidateSidecarSetHandler(t *testing.T) {
	first := set("first", map[string]string{"app": "web"})
	h := handlers(t, []*appsv1alpha1.SidecarSet{first})
	clash := set("clash", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Name = "first-side" })
	r := h.ValidateSidecarSet(context.Background(), setRequest(t, admissionv1.Create, clash, nil))
	assert.False(t, r.Allowed)
	assert.Equal(t, int32(422), r.Result.Code)
	assert.Contains(t, r.Result.Message, `SidecarSet.apps.kruise.io "clash" is invalid: spec.containers[0].name`)

	ok := set("fine", map[string]string{"app": "web"})
	assert.True(t, h.ValidateSidecarSet(context.Background(), setRequest(t, admissionv1.Create, ok, nil)).Allowed)

	// Updating itself does not conflict with its own cached version.
	upd := first.DeepCopy()
	upd.Spec.Containers[0].Image = "side:2"
	assert.True(t, h.ValidateSidecarSet(context.Background(), setRequest(t, admissionv1.Update, upd, first)).Allowed)
	// A SidecarSet being deleted is never blocked.
	upd.Spec.Containers[0].Name = "renamed"
	upd.DeletionTimestamp = ptr.To(metav1.Now())
	assert.True(t, h.ValidateSidecarSet(context.Background(), setRequest(t, admissionv1.Update, upd, first)).Allowed)
}

func TestValidate(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "s-v1", Namespace: "flotilla-system",
		Labels: map[string]string{sidecarcontrol.RevisionNameLabel: "s", sidecarcontrol.CustomVersionLabel: "v1"}}, Revision: 1}
	revs := sidecarcontrol.RevisionList{rev}
	web := map[string]string{"app": "web"}
	cases := []struct {
		name      string
		set, old  *appsv1alpha1.SidecarSet
		others    []*appsv1alpha1.SidecarSet
		wantField string // "" = valid
	}{
		{name: "no others", set: set("s", web)},
		{name: "container name taken by an overlapping set", set: set("s", web, rename("c")),
			others: []*appsv1alpha1.SidecarSet{set("o", map[string]string{"app": "web", "tier": "x"}, rename("c"))}, wantField: "spec.containers[0].name"},
		{name: "same name, disjoint selectors", set: set("s", web, rename("c")),
			others: []*appsv1alpha1.SidecarSet{set("o", map[string]string{"app": "db"}, rename("c"))}},
		{name: "same name, other namespace", set: set("s", web, rename("c"), inNS("a")),
			others: []*appsv1alpha1.SidecarSet{set("o", web, rename("c"), inNS("b"))}},
		{name: "namespace vs namespaceSelector on its name overlap", set: set("s", web, rename("c"), inNS("a")),
			others: []*appsv1alpha1.SidecarSet{set("o", web, rename("c"), func(s *appsv1alpha1.SidecarSet) {
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
			})}, wantField: "spec.containers[0].name"},
		{name: "init container name taken", set: set("s", web, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init"}}}
		}), others: []*appsv1alpha1.SidecarSet{set("o", web, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init"}}}
		})}, wantField: "spec.initContainers[0].name"},
		{name: "volume defined differently", set: set("s", web, volume("v", "/a")),
			others: []*appsv1alpha1.SidecarSet{set("o", web, volume("v", "/b"))}, wantField: "spec.volumes[0]"},
		{name: "volume defined identically", set: set("s", web, volume("v", "/a")),
			others: []*appsv1alpha1.SidecarSet{set("o", web, volume("v", "/a"))}},
		{name: "overwritten annotation claimed twice", set: set("s", web, patch("k", appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy)),
			others: []*appsv1alpha1.SidecarSet{set("o", web, patch("k", appsv1alpha1.SidecarSetOverwritePatchPolicy))}, wantField: "spec.patchPodMetadata[0].annotations[k]"},
		{name: "two merge patches of one annotation", set: set("s", web, patch("k", appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy)),
			others: []*appsv1alpha1.SidecarSet{set("o", web, patch("k", appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy))}},
		{name: "pinned revision missing", set: set("s", web, pin("nope", "")), wantField: "spec.injectionStrategy.revision.revisionName"},
		{name: "pinned custom version missing", set: set("s", web, pin("", "v9")), wantField: "spec.injectionStrategy.revision.customVersion"},
		{name: "pinned revision exists", set: set("s", web, pin("s-v1", ""))},
		{name: "pinned custom version exists", set: set("s", web, pin("", "v1"))},
		{name: "upgradeType changed", set: set("s", web, hot), old: set("s", web), wantField: "spec.containers[0].upgradeStrategy.upgradeType"},
		{name: "image changed", set: set("s", web, func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Image = "side:2" }), old: set("s", web)},
		{name: "HotUpgrade without empty image", set: set("s", web, func(s *appsv1alpha1.SidecarSet) {
			hot(s)
			s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = ""
		}), wantField: "spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage"},
		{name: "transferEnv from spec", set: set("s", web, transfer("spec.nodeName")), wantField: "spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef.fieldPath"},
		{name: "transferEnv from a label", set: set("s", web, transfer("metadata.labels['app']"))},
		{name: "transferEnv from the name", set: set("s", web, transfer("metadata.name"))},
		{name: "native sidecar with RollingUpdate", set: set("s", web, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = appsv1alpha1.RollingUpdateSidecarSetStrategyType
			s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}}
		}), wantField: "spec.updateStrategy.type"},
		{name: "native sidecar with NotUpdate", set: set("s", web, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
			s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}}
		})},
		{name: "container added on update", set: set("s", web, func(s *appsv1alpha1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, appsv1alpha1.SidecarContainer{Container: corev1.Container{Name: "new"}})
		}), old: set("s", web), wantField: "spec.containers[1].name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Validate(c.set, c.old, c.others, revs)
			if c.wantField == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Equal(t, c.wantField, errs[0].Field, errs.ToAggregate().Error())
		})
	}
}

func rename(n string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Name = n }
}
func inNS(ns string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = ns }
}
func volume(name, path string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Volumes = []corev1.Volume{{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
	}
}
func patch(key string, policy appsv1alpha1.SidecarSetPatchPolicyType) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{key: `{"a":1}`}, PatchPolicy: policy}}
	}
}
func pin(name, version string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		r := &appsv1alpha1.SidecarSetInjectRevision{}
		if name != "" {
			r.RevisionName = &name
		}
		if version != "" {
			r.CustomVersion = &version
		}
		s.Spec.InjectionStrategy.Revision = r
	}
}
func transfer(path string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].TransferEnv = []appsv1alpha1.TransferEnvVar{{EnvName: "X",
			SourceContainerNameFrom: &appsv1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}}
	}
}
func hot(s *appsv1alpha1.SidecarSet) {
	s.Spec.Containers[0].UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
		UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
}

func TestPodScope(t *testing.T) {
	cond := func(t *testing.T, sets ...*appsv1alpha1.SidecarSet) string {
		t.Helper()
		s, err := PodScope(sets)
		require.NoError(t, err)
		require.Len(t, s.MatchConditions, 1)
		assert.Equal(t, ScopeCondition, s.MatchConditions[0].Name)
		assert.True(t, strings.HasPrefix(ScopeCondition, kitwebhook.OwnedPrefix), "owned by the syncer")
		return s.MatchConditions[0].Expression
	}
	assert.Equal(t, kitwebhook.Never, cond(t), "no SidecarSet: no call")
	assert.Equal(t, kitwebhook.Never, cond(t, set("p", map[string]string{"a": "b"}, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })),
		"paused injection: no call")
	assert.Equal(t, kitwebhook.Never, cond(t, set("e", nil)), "an empty selector injects nowhere")
	gone := set("d", map[string]string{"a": "b"})
	gone.DeletionTimestamp = ptr.To(metav1.NewTime(time.Now()))
	assert.Equal(t, kitwebhook.Never, cond(t, gone))

	e := cond(t, set("ns", map[string]string{"app": "web"}, inNS("team")))
	assert.Contains(t, e, `request.namespace == "team"`)
	assert.Contains(t, e, `object.metadata.labels["app"] == "web"`)

	e = cond(t, set("nsn", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "a"}}
	}))
	assert.Contains(t, e, `request.namespace == "a"`, "a namespaceSelector on the name label narrows by namespace")

	e = cond(t, set("nsl", map[string]string{"app": "web"}, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "on"}}
	}))
	assert.NotContains(t, e, "request.namespace", "other namespace labels: decided by the handler")

	e = cond(t, set("a", map[string]string{"app": "a"}), set("b", map[string]string{"app": "b"}))
	assert.Contains(t, e, " || ")

	// Hundreds of SidecarSets: wider, never narrower.
	var many []*appsv1alpha1.SidecarSet
	for i := range 2000 {
		many = append(many, set("m", map[string]string{"app": strings.Repeat("x", 20) + string(rune('a'+i%26)) + strings.Repeat("y", i%50)}))
	}
	assert.Equal(t, kitwebhook.Always, cond(t, many...))
}

// With PodWebhook off only the SidecarSet validation is served.
func TestRegister(t *testing.T) {
	h := handlers(t, nil)
	all := kitwebhook.NewServer(kitwebhook.ServerOptions{}, nil, nil)
	h.Register(all)
	assert.Equal(t, map[string]string{PodPath: "sidecarset-inject-pod", SidecarSetPath: "sidecarset-validate"}, all.Paths())
	only := kitwebhook.NewServer(kitwebhook.ServerOptions{}, nil, nil)
	h.RegisterValidation(only)
	assert.Equal(t, map[string]string{SidecarSetPath: "sidecarset-validate"}, only.Paths())
}
