package podcontrol

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// adoptPatch makes ref the pod's controller. The patch carries the pod's
// uid, so it fails instead of touching a namesake created meanwhile; the API
// server rejects it (Invalid) if another controller adopted the pod first.
func adoptPatch(uid types.UID, ref metav1.OwnerReference) ([]byte, error) {
	refJSON, err := json.Marshal(ref)
	if err != nil {
		return nil, fmt.Errorf("encode owner reference: %w", err)
	}
	return fmt.Appendf(nil, `{"metadata":{"ownerReferences":[%s],"uid":%q}}`, refJSON, uid), nil
}

// releasePatch removes the ownerReference to owner (guarded by the pod's
// uid likewise).
func releasePatch(uid, owner types.UID) []byte {
	return fmt.Appendf(nil, `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, owner, uid)
}
