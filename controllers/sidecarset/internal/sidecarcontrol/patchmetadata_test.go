package sidecarcontrol

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The v1.3 release blog's example (§4), with its YAML indentation repaired.
var seedPatches = []appsv1alpha1.SidecarSetPatchPodMetadata{
	{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{
		"oom-score": `{"log-agent": 1}`,
		"custom.example.com/sidecar-configuration": `{"command": "/home/admin/bin/start.sh", "log-level": "3"}`,
	}},
	{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{
		"apps.kruise.io/container-launch-priority": "Ordered",
	}},
}

func TestPatchAnnotations(t *testing.T) {
	cases := []struct {
		name           string
		pod            map[string]string
		patches        []appsv1alpha1.SidecarSetPatchPodMetadata
		onlyUpgradable bool
		want           map[string]string
		wantErr        string
	}{
		{name: "retain adds missing keys only",
			pod:     map[string]string{"a": "pod"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "set", "b": "set"}}},
			want:    map[string]string{"a": "pod", "b": "set"}},
		{name: "overwrite sets every key",
			pod:     map[string]string{"a": "pod"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"a": "set"}}},
			want:    map[string]string{"a": "set"}},
		{name: "seed: MergePatchJson merges JSON values, overwrite sets",
			pod:     map[string]string{"oom-score": `{"main": 2}`},
			patches: seedPatches,
			want: map[string]string{
				"oom-score": `{"log-agent":1,"main":2}`,
				"custom.example.com/sidecar-configuration": `{"command": "/home/admin/bin/start.sh", "log-level": "3"}`,
				"apps.kruise.io/container-launch-priority": "Ordered",
			}},
		{name: "upgrade re-applies Overwrite and MergePatchJson, not Retain",
			pod: map[string]string{"r": "old", "o": "old", "m": `{"x":1}`},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"r": "new", "r2": "new"}},
				{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"o": "new"}},
				{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"m": `{"y":2}`}},
			},
			onlyUpgradable: true,
			want:           map[string]string{"r": "old", "o": "new", "m": `{"x":1,"y":2}`}},
		{name: "MergePatchJson into a non-JSON value fails naming the key",
			pod:     map[string]string{"m": "not json"},
			patches: []appsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"m": `{"y":2}`}}},
			wantErr: "spec.patchPodMetadata[0].annotations[m]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PatchAnnotations(tc.pod, tc.patches, tc.onlyUpgradable)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v\nwant %v", got, err, tc.want)
			}
		})
	}
}

func TestCheckPatchPodMetadata(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Labels = map[string]string{"team": "mesh"}
		s.Spec.PatchPodMetadata = seedPatches
	})
	wl := func(raw string) *Whitelist {
		w, err := ParseWhitelist(map[string]string{WhitelistKey: raw})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	cases := []struct {
		name     string
		w        *Whitelist
		defaults bool
		wantErr  string
	}{
		{"no whitelist, gate off", nil, false, "SidecarSetPatchPodMetadataDefaultsAllowed"},
		{"no whitelist, gate on", nil, true, ""},
		{"rule allows every key", wl(`{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$","^custom\\.example\\.com/.*","^apps\\.kruise\\.io/container-launch-priority$"]}]}`), false, ""},
		{"rule misses one key", wl(`{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$","^custom\\.example\\.com/.*"]}]}`), false, "annotations[apps.kruise.io/container-launch-priority]"},
		{"rule selects other sidecarsets", wl(`{"rules":[{"selector":{"matchLabels":{"team":"other"}},"allowedAnnotationKeyExprs":[".*"]}]}`), false, "no SidecarSet_PatchPodMetadata_WhiteList rule selects"},
		{"rule selects this sidecarset", wl(`{"rules":[{"selector":{"matchLabels":{"team":"mesh"}},"allowedAnnotationKeyExprs":[".*"]}]}`), false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPatchPodMetadata(set, tc.w, tc.defaults)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
	if w, err := ParseWhitelist(map[string]string{"other": "x"}); w != nil || err != nil {
		t.Fatal("absent key is no whitelist")
	}
}

func TestInjectPatchPodMetadata(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.PatchPodMetadata = seedPatches })
	pod := newPod(func(p *corev1.Pod) { p.Annotations = map[string]string{"oom-score": `{"main": 2}`} })

	// Not allowed: the pod is still created, with the sidecars and a warning.
	out, warnings := mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	if out.Annotations["oom-score"] != `{"main": 2}` || len(warnings) != 1 || !strings.Contains(warnings[0], "patchPodMetadata skipped") {
		t.Fatalf("disallowed patch: annotations %v warnings %v", out.Annotations, warnings)
	}
	if len(out.Spec.Containers) != 2 {
		t.Fatal("sidecar not injected")
	}
	out, warnings = mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{PatchMetadataDefaultsAllowed: true})
	if out.Annotations["oom-score"] != `{"log-agent":1,"main":2}` || out.Annotations["apps.kruise.io/container-launch-priority"] != "Ordered" || len(warnings) != 0 {
		t.Fatalf("allowed patch: annotations %v warnings %v", out.Annotations, warnings)
	}
}
