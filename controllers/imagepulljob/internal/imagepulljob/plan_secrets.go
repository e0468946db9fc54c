package imagepulljob

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations OpenKruise v1.9 puts on the copies of pull secrets it keeps for its node daemon (here: in the
// node agent's namespace): the source secret ("namespace/name"), the jobs using the copy ("ns/job,ns/job2",
// sorted), and the mode of the NodeImage references to it ("batch": removed with the image entry).
const (
	SecretAnnotationSourceKey  = "imagepulljobs.kruise.io/source-key"
	SecretAnnotationReferences = "imagepulljobs.kruise.io/references"
	SecretAnnotationMode       = "imagepulljobs.kruise.io/mode"
)

// copyName names the agent-namespace copy of namespace/name: the source name and a hash of its namespace/name, so
// that one source has one copy (shared by every job naming it) and two sources never collide. OpenKruise uses a
// random suffix and finds copies by listing; a fixed name lets each sync read just its copy.
func copyName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	if len(name) > 240 {
		name = name[:240]
	}
	return strings.TrimRight(name, ".-") + "-" + hex.EncodeToString(sum[:])[:10]
}

// references parses the references annotation.
func references(s *corev1.Secret) []string {
	v := s.Annotations[SecretAnnotationReferences]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func withReferences(s *corev1.Secret, refs []string) {
	slices.Sort(refs)
	s.Annotations[SecretAnnotationReferences] = strings.Join(slices.Compact(refs), ",")
}

// claimCopy returns the agent-namespace copy of src that job (jobKey "ns/name") uses, to create (when copy is nil)
// or update, or nil when copy already has src's type and data and names the job.
func claimCopy(src, cp *corev1.Secret, agentNamespace, jobKey string) *corev1.Secret {
	if cp == nil {
		out := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: copyName(src.Namespace, src.Name),
				Annotations: map[string]string{SecretAnnotationSourceKey: src.Namespace + "/" + src.Name, SecretAnnotationMode: "batch"}},
			Type: src.Type,
			Data: maps.Clone(src.Data),
		}
		withReferences(out, []string{jobKey})
		return out
	}
	refs := references(cp)
	if slices.Contains(refs, jobKey) && cp.Type == src.Type && maps.EqualFunc(cp.Data, src.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	out := cp.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	withReferences(out, append(refs, jobKey))
	out.Type, out.Data = src.Type, maps.Clone(src.Data)
	return out
}

// releaseCopy drops jobKey from a copy's references: it returns the copy to update, or remove=true when no job
// uses it any more; nil and false when the job did not use it.
func releaseCopy(cp *corev1.Secret, jobKey string) (out *corev1.Secret, remove bool) {
	refs := references(cp)
	if !slices.Contains(refs, jobKey) {
		return nil, false
	}
	refs = slices.DeleteFunc(refs, func(r string) bool { return r == jobKey })
	if len(refs) == 0 {
		return nil, true
	}
	out = cp.DeepCopy()
	withReferences(out, refs)
	return out, false
}
