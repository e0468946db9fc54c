package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Controlled keeps the objects of the asked type whose controller is the
// owner; merely owned ones, other owners' and other types are left out.
func TestControlled(t *testing.T) {
	owner := &metav1.ObjectMeta{Namespace: "ns", Name: "set", UID: "owner"}
	ref := func(uid types.UID, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "X", Name: "set", UID: uid, Controller: ptr.To(controller)}}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{OwnerUIDIndex: IndexByOwnerUID})
	for _, o := range []any{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "controlled", OwnerReferences: ref("owner", true)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owned", OwnerReferences: ref("owner", false)}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", OwnerReferences: ref("other", true)}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", OwnerReferences: ref("owner", true)}},
	} {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := Controlled[*corev1.Pod](idx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Name != "controlled" {
		t.Fatalf("pods = %v, want [controlled]", pods)
	}
	claims, err := Controlled[*corev1.PersistentVolumeClaim](idx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Name != "claim" {
		t.Fatalf("claims = %v, want [claim]", claims)
	}
}
