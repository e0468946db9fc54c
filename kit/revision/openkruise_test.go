package revision

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// shopTemplate is a CloneSet / Advanced StatefulSet template as the API
// server stores it after OpenKruise's defaulting webhook.
func shopTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "shop", "tier": "web"},
			Annotations: map[string]string{"note": "a&b"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.local/shop:v1", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				Ports:     []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy: corev1.DNSClusterFirst, SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: "default-scheduler",
		},
	}
}

// shopOpenKruise is the revision data OpenKruise v1.9 writes for
// shopTemplate, derived by hand from its source:
// pkg/controller/cloneset/revision/cloneset_revision.go getPatch (and the
// identical getPatch of pkg/controller/statefulset/stateful_set_utils.go)
// encodes the whole object with encoding/json through the Kubernetes 1.32
// codec, so the template's zero metav1.ObjectMeta.CreationTimestamp is
// written as null; it decodes that into map[string]interface{}, keeps only
// spec.template, adds "$patch":"replace" (clonesetcore SetRevisionTemplate)
// and encodes the map again: keys sorted at every level, '&' escaped.
// (Cross-checked once by encoding shopTemplate with k8s.io/api v0.32.10.)
const shopOpenKruise = `{"spec":{"template":{"$patch":"replace",` +
	`"metadata":{"annotations":{"note":"a\u0026b"},"creationTimestamp":null,"labels":{"app":"shop","tier":"web"}},` +
	`"spec":{"containers":[{"image":"registry.local/shop:v1","imagePullPolicy":"IfNotPresent","name":"main",` +
	`"ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m"}},` +
	`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],` +
	`"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",` +
	`"securityContext":{},"terminationGracePeriodSeconds":30}}}}`

// shopFlotillaBefore is what Flotilla's TemplatePatch wrote for the same
// template before it matched OpenKruise (Kubernetes 1.33+ types omit the zero
// creationTimestamp): clusters already running Flotilla hold such revisions.
const shopFlotillaBefore = `{"spec":{"template":{"$patch":"replace",` +
	`"metadata":{"annotations":{"note":"a\u0026b"},"labels":{"app":"shop","tier":"web"}},` +
	`"spec":{"containers":[{"image":"registry.local/shop:v1","imagePullPolicy":"IfNotPresent","name":"main",` +
	`"ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m"}},` +
	`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],` +
	`"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",` +
	`"securityContext":{},"terminationGracePeriodSeconds":30}}}}`

// The data bytes, hash and name OpenKruise v1.9 gives shopTemplate's
// revision: history.NewControllerRevision (k8s.io/kubernetes 1.32
// pkg/controller/history) hashes the raw data with hash/fnv.New32, then the
// decimal collisionCount (HashControllerRevision), names it
// ControllerRevisionName(parent, hash) and sets controller.kubernetes.io/hash.
// Hashes computed with the Python FNV-1 of TestHashPinned.
func TestOpenKruiseV19Revision(t *testing.T) {
	got, err := TemplatePatch(shopTemplate())
	require.NoError(t, err)
	assert.Equal(t, shopOpenKruise, string(got))

	for _, tc := range []struct {
		collisions int32
		wantName   string
	}{
		{0, "shop-c8dc74d9c"},
		{1, "shop-c8dc74d9b"},
	} {
		parent := &metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "cs"}
		rev := New(parent, cloneSetKind, shopTemplate().Labels, got, 1, ptr.To(tc.collisions))
		assert.Equal(t, tc.wantName, rev.Name)
		assert.Equal(t, tc.wantName, "shop-"+rev.Labels[HashLabel])
		assert.Equal(t, map[string]string{"app": "shop", "tier": "web", HashLabel: rev.Labels[HashLabel]}, rev.Labels)
	}
	assert.Equal(t, "7b474599c9", Hash([]byte(shopFlotillaBefore), ptr.To[int32](0)), "the older bytes hash elsewhere")
}

func TestEquivalent(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"OpenKruise v1.9 and Flotilla-before bytes of one template", shopOpenKruise, shopFlotillaBefore, true},
		{"identical", shopOpenKruise, shopOpenKruise, true},
		{"key order and whitespace", `{"a":1,"b":{"c":null}}`, `{ "b":{}, "a":1 }`, true},
		{"another image", shopOpenKruise, `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null}}}}`, false},
		{"null is not an empty object", `{"a":null}`, `{"a":{}}`, false},
		{"undecodable, equal bytes", `{`, `{`, true},
		{"undecodable", `{`, `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Equivalent([]byte(tc.a), []byte(tc.b)))
			assert.Equal(t, tc.want, Equivalent([]byte(tc.b), []byte(tc.a)))
		})
	}
}

// Takeover and upgrade: Resolve reuses the revision holding the template —
// OpenKruise's (same bytes) or one an older Flotilla wrote (equivalent bytes
// under another name) — and writes nothing; the exact one wins when both
// exist.
func TestResolveTakeover(t *testing.T) {
	parent := &metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "owner"}
	stored := func(name, data string, rev int64) *appsv1.ControllerRevision {
		r := existing(name, data, "owner")
		r.Revision = rev
		return r
	}
	data, err := TemplatePatch(shopTemplate())
	require.NoError(t, err)
	v0 := `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null},"spec":{"containers":[{"image":"x:0","name":"main"}]}}}}`
	for _, tc := range []struct {
		name       string
		revisions  []*appsv1.ControllerRevision
		wantName   string
		wantNumber int64
		wantVerbs  []string
	}{
		{name: "OpenKruise's revision (same bytes): reused, nothing written",
			revisions: []*appsv1.ControllerRevision{stored("shop-old", v0, 1), stored("shop-c8dc74d9c", shopOpenKruise, 2)},
			wantName:  "shop-c8dc74d9c", wantNumber: 2, wantVerbs: []string{}},
		{name: "an older Flotilla's revision (equivalent bytes): reused, nothing written",
			revisions: []*appsv1.ControllerRevision{stored("shop-old", v0, 1), stored("shop-7b474599c9", shopFlotillaBefore, 2)},
			wantName:  "shop-7b474599c9", wantNumber: 2, wantVerbs: []string{}},
		{name: "both: the exact one wins (rolled forward, not a twin)",
			revisions: []*appsv1.ControllerRevision{stored("shop-c8dc74d9c", shopOpenKruise, 1), stored("shop-7b474599c9", shopFlotillaBefore, 2)},
			wantName:  "shop-c8dc74d9c", wantNumber: 3, wantVerbs: []string{"update"}},
		{name: "rollback to an equivalent older revision re-numbers it",
			revisions: []*appsv1.ControllerRevision{stored("shop-7b474599c9", shopFlotillaBefore, 1), stored("shop-old", v0, 2)},
			wantName:  "shop-7b474599c9", wantNumber: 3, wantVerbs: []string{"update"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newRecorder()
			var collisions int32
			want := New(parent, cloneSetKind, nil, data, NextRevisionNumber(tc.revisions), &collisions)
			res, err := Resolve(context.Background(), ctl, parent, want, tc.revisions, &collisions)
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, res.Update.Name)
			assert.Equal(t, tc.wantNumber, res.Update.Revision)
			assert.Equal(t, tc.wantVerbs, ctl.verbs)
			assert.Equal(t, int32(0), collisions)
		})
	}
}
