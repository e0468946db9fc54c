package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkByOwnerUID looks up the 100 pods of one owner among 10,000 cached
// pods of 100 owners: what a sync does instead of listing the namespace.
func BenchmarkByOwnerUID(b *testing.B) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{OwnerUIDIndex: IndexByOwnerUID})
	for o := range 100 {
		for i := range 100 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: fmt.Sprintf("set-%d-%d", o, i),
				OwnerReferences: []metav1.OwnerReference{{UID: types.UID(fmt.Sprintf("owner-%d", o))}},
			}}
			if err := idx.Add(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, err := ByOwnerUID(idx, "owner-42")
		if err != nil || len(objs) != 100 {
			b.Fatalf("%d objects, %v", len(objs), err)
		}
	}
}
