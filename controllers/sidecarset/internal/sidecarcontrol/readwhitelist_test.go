package sidecarcontrol

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestReadWhitelist(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sys", Name: ConfigMapName}, Data: data}
	}
	for _, tc := range []struct {
		name      string
		cm        *corev1.ConfigMap
		wantRules int
		wantNil   bool
		wantErr   bool
	}{
		{name: "no ConfigMap", wantNil: true},
		{name: "no key", cm: cm(map[string]string{"other": "x"}), wantNil: true},
		{name: "rules", cm: cm(map[string]string{WhitelistKey: `{"rules":[{"allowedAnnotationKeyExprs":["a.*"]}]}`}), wantRules: 1},
		{name: "bad JSON", cm: cm(map[string]string{WhitelistKey: `{`}), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tc.cm != nil {
				if err := idx.Add(tc.cm); err != nil {
					t.Fatal(err)
				}
			}
			w, err := ReadWhitelist(corelisters.NewConfigMapLister(idx), "sys")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if (w == nil) != tc.wantNil {
				t.Fatalf("whitelist = %v, want nil %v", w, tc.wantNil)
			}
			if w != nil && len(w.Rules) != tc.wantRules {
				t.Fatalf("rules = %d, want %d", len(w.Rules), tc.wantRules)
			}
		})
	}
}
