package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// CopyLabel marks every copy this controller writes. It is Flotilla's own (OpenKruise writes no label): the
// controller's Secret and ConfigMap informers list and watch only objects carrying it, so it never caches the
// cluster's other Secrets. The value is always "true"; which distribution a copy belongs to is its controllerRef.
const CopyLabel = "resourcedistribution.flotilla.dev/copy"

// Kinds a ResourceDistribution distributes (OpenKruise's supported GroupKinds: core Secret and ConfigMap).
const (
	kindSecret    = "Secret"
	kindConfigMap = "ConfigMap"
)

// source is a distribution's spec.resource, decoded and checked.
type source struct {
	kind string
	// obj is a *corev1.Secret or *corev1.ConfigMap as the API server would store it (stringData folded into
	// data, Secret type defaulted), so it compares equal to an up-to-date stored copy.
	obj  metav1.Object
	hash string
}

// parseSource decodes rd.spec.resource. The CRD's CEL rules reject what it rejects; this check remains for
// objects stored before those rules (e.g. by OpenKruise's CRD), which the controller then leaves alone.
func parseSource(rd *appsv1alpha1.ResourceDistribution) (*source, error) {
	raw := rd.Spec.Resource.Raw
	if len(raw) == 0 {
		return nil, errors.New("spec.resource is empty")
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("spec.resource does not decode: %w", err)
	}
	if tm.APIVersion != "v1" || (tm.Kind != kindSecret && tm.Kind != kindConfigMap) {
		return nil, fmt.Errorf("spec.resource: unsupported resource kind %s %s, only v1 Secret and v1 ConfigMap are supported", tm.APIVersion, tm.Kind)
	}
	s := &source{kind: tm.Kind, hash: hashResource(raw)}
	switch tm.Kind {
	case kindSecret:
		sec := &corev1.Secret{}
		if err := json.Unmarshal(raw, sec); err != nil {
			return nil, fmt.Errorf("spec.resource does not decode as a Secret: %w", err)
		}
		normaliseSecret(sec)
		s.obj = sec
	default:
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal(raw, cm); err != nil {
			return nil, fmt.Errorf("spec.resource does not decode as a ConfigMap: %w", err)
		}
		s.obj = cm
	}
	if s.obj.GetName() == "" {
		return nil, errors.New("spec.resource.metadata.name is required")
	}
	return s, nil
}

// normaliseSecret does what the API server does on write: stringData overrides data and is dropped, and an
// empty type is Opaque. Without it an up-to-date copy would always differ from the source.
func normaliseSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// hashResource is OpenKruise's hash annotation value: the SHA-256 (hex) of spec.resource as stored.
func hashResource(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// isControlledBy reports whether obj's controllerRef points at a ResourceDistribution named name (any served
// version; the UID is not compared, as in OpenKruise, so a distribution re-created under the same name takes
// its copies back instead of reporting them as conflicts).
func isControlledBy(obj metav1.Object, name string) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ownerKind.Matches(ref) && ref.Name == name
}

// desiredMeta is the metadata a copy must carry: the source's labels and annotations, CopyLabel, the hash and
// source annotations, and the distribution as controller.
type desiredMeta struct {
	labels      map[string]string
	annotations map[string]string
	owner       metav1.OwnerReference
}

func newDesiredMeta(rd *appsv1alpha1.ResourceDistribution, src *source) desiredMeta {
	l := maps.Clone(src.obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[CopyLabel] = "true"
	a := maps.Clone(src.obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	a[appsv1alpha1.ResourceDistributionHashAnnotation] = src.hash
	a[appsv1alpha1.ResourceDistributionSourceAnnotation] = rd.Name
	return desiredMeta{labels: l, annotations: a,
		owner: *metav1.NewControllerRef(rd, appsv1alpha1.SchemeGroupVersion.WithKind("ResourceDistribution"))}
}

// needsUpdate reports whether existing, a copy this distribution controls, differs from what it should be: its
// content, a label or annotation the source sets (extra ones, e.g. added by other tools, are kept as in
// OpenKruise), or its controllerRef's UID. An up-to-date copy is never written.
func needsUpdate(existing, src metav1.Object, want desiredMeta) bool {
	if !sameContent(existing, src) || !containsAll(existing.GetLabels(), want.labels) ||
		!containsAll(existing.GetAnnotations(), want.annotations) {
		return true
	}
	ref := metav1.GetControllerOfNoCopy(existing)
	return ref == nil || ref.UID != want.owner.UID
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// sameContent compares what a copy carries besides metadata.
func sameContent(a, b metav1.Object) bool {
	switch x := a.(type) {
	case *corev1.Secret:
		y, ok := b.(*corev1.Secret)
		return ok && x.Type == y.Type && equality.Semantic.DeepEqual(x.Data, y.Data) &&
			equality.Semantic.DeepEqual(x.Immutable, y.Immutable)
	case *corev1.ConfigMap:
		y, ok := b.(*corev1.ConfigMap)
		return ok && equality.Semantic.DeepEqual(x.Data, y.Data) && equality.Semantic.DeepEqual(x.BinaryData, y.BinaryData) &&
			equality.Semantic.DeepEqual(x.Immutable, y.Immutable)
	}
	return false
}

// newCopy builds the copy of src for namespace ns.
func newCopy(src *source, ns string, want desiredMeta) metav1.Object {
	meta := metav1.ObjectMeta{Name: src.obj.GetName(), Namespace: ns, Labels: maps.Clone(want.labels),
		Annotations: maps.Clone(want.annotations), OwnerReferences: []metav1.OwnerReference{want.owner}}
	switch s := src.obj.(type) {
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: meta, Type: s.Type, Data: maps.Clone(s.Data), Immutable: s.Immutable}
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: meta, Data: maps.Clone(s.Data), BinaryData: maps.Clone(s.BinaryData),
			Immutable: s.Immutable}
	}
	return nil
}

// updatedCopy returns a deep copy of existing brought up to date: content replaced, the source's labels and
// annotations set over the existing ones (which are otherwise kept, as OpenKruise merges them), finalizers
// kept, and the controllerRef pointing at this distribution (replacing one to an earlier distribution of the
// same name).
func updatedCopy(existing, src metav1.Object, want desiredMeta) metav1.Object {
	var out metav1.Object
	switch e := existing.(type) {
	case *corev1.Secret:
		s := src.(*corev1.Secret)
		c := e.DeepCopy()
		c.Type, c.Data, c.Immutable, c.StringData = s.Type, maps.Clone(s.Data), s.Immutable, nil
		out = c
	case *corev1.ConfigMap:
		s := src.(*corev1.ConfigMap)
		c := e.DeepCopy()
		c.Data, c.BinaryData, c.Immutable = maps.Clone(s.Data), maps.Clone(s.BinaryData), s.Immutable
		out = c
	default:
		return nil
	}
	l := out.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, want.labels)
	out.SetLabels(l)
	a := out.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, want.annotations)
	out.SetAnnotations(a)
	refs := []metav1.OwnerReference{want.owner}
	for _, r := range out.GetOwnerReferences() {
		if ownerKind.Matches(&r) && r.Controller != nil && *r.Controller {
			continue
		}
		if r.UID != want.owner.UID {
			refs = append(refs, r)
		}
	}
	out.SetOwnerReferences(refs)
	return out
}
