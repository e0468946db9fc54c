package inplace

import (
	"testing"
)

// BenchmarkDiff diffs two revisions of the realistic three-container
// template: a new image for main and a changed annotation read by the
// sidecar's env (the common CloneSet rollout).
func BenchmarkDiff(b *testing.B) {
	newT := template()
	newT.Spec.Containers[0].Image = "registry.example.com/shop/web:v2"
	newT.Annotations["app-config"] = "v2"
	oldB, newB := data(b, template()), data(b, newT)
	if _, ok := Diff(oldB, newB); !ok {
		b.Fatal("not in place")
	}
	b.SetBytes(int64(len(oldB) + len(newB)))
	b.ReportAllocs()
	for b.Loop() {
		Diff(oldB, newB)
	}
}

// BenchmarkDiffNotInPlace measures the rejection path (an env change).
func BenchmarkDiffNotInPlace(b *testing.B) {
	newT := template()
	newT.Spec.Containers[0].Env[0].Value = "debug"
	oldB, newB := data(b, template()), data(b, newT)
	b.ReportAllocs()
	for b.Loop() {
		Diff(oldB, newB)
	}
}
