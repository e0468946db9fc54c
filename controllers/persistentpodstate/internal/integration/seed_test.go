package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/apis/testing/seeds"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// The seed v1.2 §1 example (004#1, the PersistentPodState `echoserver`, and
// 004#2, the StatefulSet annotations that ask for it; 002#8 and 002#9 are
// the same two objects in the English post), taken from the seed text.
//
// Both write each key list as "<key>[,other node labels]": documentation
// syntax for "this key, optionally more, comma separated". Taken literally
// the keys name no node label (the API server refuses '[' and spaces in a
// label key), so no node could ever be recorded; the test resolves the
// placeholder to "no other labels" by removing exactly that text (and
// checks it is there, so that a changed seed fails here rather than being
// tested by a copy). Everything else is the seed as written: the
// StatefulSet's apiVersion apps.kruise.io/v1alpha1 and its annotations; the
// test adds only what the snippet elides (the name, from 004#1's targetRef,
// and a spec: replicas, selector, template). The literal keys are tested
// as written by TestAutoGenerateAdvancedStatefulSet.
const seedPlaceholder = "[,other node labels]"

// seedBetaZoneKey is the zone label the seed names (the deprecated beta
// key, still set by some providers; the kwok nodes here carry it).
const seedBetaZoneKey = "failure-domain.beta.kubernetes.io/zone"

// seedExample returns the seed example id (e.g. "004#1") with the key-list
// placeholder resolved.
func seedExample(t *testing.T, id string) string {
	t.Helper()
	dir, err := seeds.Dir()
	require.NoError(t, err, "seed documents are required for this test")
	all, err := seeds.Load(dir)
	require.NoError(t, err)
	for _, e := range all {
		if e.ID() == id {
			require.NoError(t, e.ParseError, "%s parses as written", id)
			require.Contains(t, e.Cleaned, seedPlaceholder, "%s: the key-list placeholder this test resolves", id)
			return strings.ReplaceAll(e.Cleaned, seedPlaceholder, "")
		}
	}
	require.Failf(t, "seed example missing", "%s not found in %s", id, dir)
	return ""
}

// The seed's StatefulSet, on kwok nodes labelled with the seed's zone key
// and their hostnames: its PersistentPodState is generated as OpenKruise
// generates it (equal to the seed's hand-written one, 004#1, controlled by
// the StatefulSet), its pods are recorded with their node's zone and
// hostname, and a pod recreated under its name (by hand: no Advanced
// StatefulSet controller runs here) gets its zone required (nodeSelector),
// its host preferred with weight 100, and is scheduled into its zone.
func TestSeedExample(t *testing.T) {
	h := newHarness(t)
	zoneOf := map[string]string{}
	for _, z := range []string{"zone-a", "zone-a", "zone-b"} {
		n := h.Env.KwokNodes(t, h.NS, 1, map[string]string{seedBetaZoneKey: z})[0]
		h.Nodes().Modify(n, func(node *corev1.Node) { node.Labels[hostKey] = n })
		zoneOf[n] = z
	}
	h.start()

	// 004#2 as written (apps.kruise.io/v1alpha1), named and given a spec.
	var sts appsv1alpha1.StatefulSet
	require.NoError(t, yaml.UnmarshalStrict([]byte(seedExample(t, "004#2")), &sts))
	var handWritten appsv1alpha1.PersistentPodState
	require.NoError(t, yaml.UnmarshalStrict([]byte(seedExample(t, "004#1")), &handWritten))
	name := handWritten.Spec.TargetReference.Name
	require.Equal(t, "echoserver", name)
	require.Equal(t, map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationPreferredPersistentTopology:    hostKey,
		appsv1alpha1.AnnotationRequiredPersistentTopology:     seedBetaZoneKey,
	}, sts.Annotations, "the seed's annotations, placeholder resolved")
	sts.Name = name
	tmpl := lab.Template(name, image)
	tmpl.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
	tmpl.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	sts.Spec.Replicas = ptr.To(int32(2))
	sts.Spec.Selector = lab.Selector(name)
	sts.Spec.ServiceName = name
	sts.Spec.Template = tmpl
	created, err := h.Client.AppsV1alpha1().StatefulSets(h.NS).Create(context.Background(), &sts, metav1.CreateOptions{})
	require.NoError(t, err)

	// Generated as OpenKruise generates it: named after the StatefulSet,
	// controlled by it, its spec the seed's own PersistentPodState's.
	pps := h.states.WaitFor(name, "generated", func(*appsv1alpha1.PersistentPodState) bool { return true })
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: name,
		UID: created.UID, Controller: ptr.To(true)}}, pps.OwnerReferences)
	assert.Equal(t, handWritten.Spec, pps.Spec, "the generated spec is the seed's hand-written PersistentPodState's (004#1)")
	assert.Equal(t, appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: name},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{seedBetaZoneKey}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostKey}}}},
	}, pps.Spec)

	// The pods its controller would create, recorded with their node's zone
	// and hostname.
	owner := &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: created.UID}}
	for _, n := range podNames(name, 2) {
		h.advancedPod(owner, n)
	}
	pods := h.waitReady(name, podNames(name, 2)...)
	pps = h.states.WaitFor(name, "both pods recorded with their node's zone and hostname", func(p *appsv1alpha1.PersistentPodState) bool {
		if len(p.Status.PodStates) != len(pods) {
			return false
		}
		for _, pod := range pods {
			s := p.Status.PodStates[pod.Name]
			want := map[string]string{seedBetaZoneKey: zoneOf[pod.Spec.NodeName], hostKey: pod.Spec.NodeName}
			if s.NodeName != pod.Spec.NodeName || !assert.ObjectsAreEqual(want, s.NodeTopologyLabels) {
				return false
			}
		}
		return true
	})
	h.states.WaitFor(name, "WebhookInScope True", func(p *appsv1alpha1.PersistentPodState) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, kitwebhook.InScopeCondition)
	})
	waitScopeNames(t, h, podNames(name, 2)...)

	// Recreated under its name: zone required, host preferred (weight 100).
	victim := name + "-1"
	recorded := pps.Status.PodStates[victim]
	h.deletePod(victim)
	h.PodObjects().WaitGone(victim)
	h.advancedPod(owner, victim)
	pod := h.recreated(victim, pods[1].UID, true)
	assert.Equal(t, name, pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
	assert.Equal(t, recorded.NodeTopologyLabels[seedBetaZoneKey], pod.Spec.NodeSelector[seedBetaZoneKey], "the recorded zone is required")
	require.NotNil(t, pod.Spec.Affinity)
	require.NotNil(t, pod.Spec.Affinity.NodeAffinity)
	assert.Nil(t, pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "the zone is required through nodeSelector")
	assert.Equal(t, []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: hostKey, Operator: corev1.NodeSelectorOpIn, Values: []string{recorded.NodeName}}}}}},
		pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "the recorded host is preferred with weight 100")
	assert.Equal(t, recorded.NodeTopologyLabels[seedBetaZoneKey], zoneOf[pod.Spec.NodeName], "scheduled into the recorded zone")
	// The other pod was not touched: its record stands.
	h.states.WaitFor(name, "both pods recorded again", func(p *appsv1alpha1.PersistentPodState) bool {
		s := p.Status.PodStates[victim]
		return len(p.Status.PodStates) == 2 && s.NodeName == pod.Spec.NodeName && s.NodeTopologyLabels[seedBetaZoneKey] == recorded.NodeTopologyLabels[seedBetaZoneKey]
	})
}
