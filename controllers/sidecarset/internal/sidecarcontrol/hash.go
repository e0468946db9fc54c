package sidecarcontrol

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Well-known keys, re-exported so callers need only this package.
const (
	HashAnnotation             = appspub.SidecarSetHashAnnotation
	HashWithoutImageAnnotation = appspub.SidecarSetHashWithoutImageAnnotation
	InjectedListAnnotation     = appspub.SidecarSetListAnnotation
	InplaceUpdateStateKey      = appspub.SidecarSetInplaceUpdateStateKey
	WorkingHotUpgradeContainer = appspub.SidecarSetWorkingHotUpgradeContainer
	RevisionNameLabel          = appspub.SidecarSetNameLabel
	CustomVersionLabel         = appspub.SidecarSetCustomVersionLabel
	UpgradableCondition        = appspub.SidecarSetUpgradable

	// InjectedEnv marks every container a SidecarSet injected.
	InjectedEnv = "IS_INJECTED"
	// VersionEnv / VersionAltEnv tell a hot-upgrade sidecar its role.
	VersionEnv    = "SIDECARSET_VERSION"
	VersionAltEnv = "SIDECARSET_VERSION_ALT"
)

// UpgradeSpec is one SidecarSet's entry in the pod annotations
// kruise.io/sidecarset-hash and kruise.io/sidecarset-hash-without-image
// (OpenKruise's SidecarSetUpgradeSpec; the field names are the wire contract).
type UpgradeSpec struct {
	UpdateTimestamp    metav1.Time `json:"updateTimestamp"`
	Hash               string      `json:"hash"`
	SidecarSetName     string      `json:"sidecarSetName"`
	SidecarList        []string    `json:"sidecarList"`
	ControllerRevision string      `json:"controllerRevision,omitempty"`
}

// Hash is the SidecarSet content hash: sha256 of the JSON of its containers
// (and its initContainers when one of them is a native sidecar), safe-encoded.
// It is what kruise.io/sidecarset-hash records per SidecarSet on pods.
func Hash(set *appsv1alpha1.SidecarSet) string {
	return hashSpec(set.Spec.Containers, set.Spec.InitContainers)
}

// HashWithoutImage is Hash with every image blanked: two SidecarSet versions
// with the same value differ only in images, which is all an in-place
// upgrade may change.
func HashWithoutImage(set *appsv1alpha1.SidecarSet) string {
	cs := blankImages(set.Spec.Containers)
	ics := blankImages(set.Spec.InitContainers)
	return hashSpec(cs, ics)
}

func blankImages(in []appsv1alpha1.SidecarContainer) []appsv1alpha1.SidecarContainer {
	out := make([]appsv1alpha1.SidecarContainer, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		out[i].Image = ""
	}
	return out
}

func hashSpec(containers, initContainers []appsv1alpha1.SidecarContainer) string {
	m := map[string]any{"containers": containers}
	for i := range initContainers {
		if IsNativeSidecar(&initContainers[i].Container) {
			m["initContainers"] = initContainers
			break
		}
	}
	// Marshalling plain structs and a map cannot fail.
	data, _ := json.Marshal(m)
	return rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(data)))
}

// IsNativeSidecar reports an init container with restartPolicy Always.
func IsNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// PodUpgradeSpecs decodes one of the two hash annotations of a pod. The
// older OpenKruise shape (a map of name to hash string) is accepted too.
func PodUpgradeSpecs(pod metav1.Object, key string) (map[string]UpgradeSpec, error) {
	out := map[string]UpgradeSpec{}
	raw := pod.GetAnnotations()[key]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err == nil {
		return out, nil
	}
	old := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &old); err != nil {
		return nil, fmt.Errorf("pod annotation %s: %w", key, err)
	}
	out = make(map[string]UpgradeSpec, len(old))
	for k, v := range old {
		out[k] = UpgradeSpec{Hash: v, SidecarSetName: k}
	}
	return out, nil
}

// PodHash is the hash recorded on pod for the named SidecarSet ("" if none,
// or if the annotation is corrupt: see CorruptAnnotation).
func PodHash(pod metav1.Object, setName string) string {
	specs, _ := PodUpgradeSpecs(pod, HashAnnotation)
	return specs[setName].Hash
}

// PodHashWithoutImage is the without-image hash recorded on pod.
func PodHashWithoutImage(pod metav1.Object, setName string) string {
	specs, _ := PodUpgradeSpecs(pod, HashWithoutImageAnnotation)
	return specs[setName].Hash
}

// PodControllerRevision is the ControllerRevision recorded on pod for the
// named SidecarSet: the revision injected or last upgraded to.
func PodControllerRevision(pod metav1.Object, setName string) string {
	specs, _ := PodUpgradeSpecs(pod, HashAnnotation)
	return specs[setName].ControllerRevision
}

// InjectedSets lists the SidecarSets named in kruise.io/sidecarset-injected-list.
func InjectedSets(pod metav1.Object) sets.Set[string] {
	s := sets.New[string]()
	if v := pod.GetAnnotations()[InjectedListAnnotation]; v != "" {
		s.Insert(strings.Split(v, ",")...)
	}
	return s
}

// IsInjected reports whether the SidecarSet named setName injected pod.
func IsInjected(pod metav1.Object, setName string) bool {
	return InjectedSets(pod).Has(setName)
}

// SidecarNames are the names of the SidecarSet's sidecars in the hash
// annotations' sidecarList: containers and native-sidecar init containers.
func SidecarNames(set *appsv1alpha1.SidecarSet) []string {
	s := sets.New[string]()
	for i := range set.Spec.Containers {
		s.Insert(set.Spec.Containers[i].Name)
	}
	for i := range set.Spec.InitContainers {
		if IsNativeSidecar(&set.Spec.InitContainers[i].Container) {
			s.Insert(set.Spec.InitContainers[i].Name)
		}
	}
	out := sets.List(s)
	sort.Strings(out)
	return out
}

// ContainersInPod are the pod container names the SidecarSet's containers
// occupy: a hot-upgrade sidecar c occupies c-1 and c-2.
func ContainersInPod(set *appsv1alpha1.SidecarSet) sets.Set[string] {
	s := sets.New[string]()
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if IsHotUpgrade(c) {
			a, b := HotUpgradeNames(c.Name)
			s.Insert(a, b)
		} else {
			s.Insert(c.Name)
		}
	}
	return s
}

func setUpgradeSpec(annotations map[string]string, key string, spec UpgradeSpec) error {
	specs, err := PodUpgradeSpecs(&metav1.ObjectMeta{Annotations: annotations}, key)
	if err != nil {
		// A corrupt annotation is replaced rather than blocking the pod forever.
		specs = map[string]UpgradeSpec{}
	}
	specs[spec.SidecarSetName] = spec
	data, err := json.Marshal(specs)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	annotations[key] = string(data)
	return nil
}
