package helmrender_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"

	"github.com/flotilla-dev/flotilla/charts/tools/gen"
	"github.com/flotilla-dev/flotilla/charts/tools/helmrender"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "charts", "flotilla") }

var only, merge = helmrender.Only, helmrender.Merge

// stripKeep removes the annotation the chart adds to what the overlays install once (namespace, CRDs).
func stripKeep(objs []map[string]any) {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		delete(ann, "helm.sh/resource-policy")
		if ann != nil && len(ann) == 0 {
			delete(md, "annotations")
		}
	}
}

// TestChartMatchesOverlays renders the chart with its defaults, one feature at a time (and all, and the namespace and
// CRD switches alone), and with each variant's value (gen.Variants, e.g. sidecarset.revisionNamespace=kruise-system),
// and compares it object by object with `kubectl kustomize` of the corresponding overlay.
func TestChartMatchesOverlays(t *testing.T) {
	root, dir := repoRoot(t), chartDir(t)
	cases := map[string]map[string]any{
		"all":       only(gen.Features, nil),
		"namespace": only(nil, map[string]any{"installation": map[string]any{"createNamespace": true}}),
		"crds":      only(nil, map[string]any{"crds": map[string]any{"managed": true}}),
	}
	for _, f := range gen.Features {
		cases[f] = only([]string{f}, nil)
	}
	// Variant overlays: the feature alone with the variant's value set to what the overlay sets. Taking over from
	// OpenKruise (issue 23) is named here, not only through gen.Variants, so that dropping it from the generator fails.
	cases["sidecarset-kruise-system"] = only([]string{"sidecarset"}, map[string]any{"sidecarset": map[string]any{"revisionNamespace": "kruise-system"}})
	for _, v := range gen.Variants {
		if _, ok := cases[v.Overlay]; !ok {
			cases[v.Overlay] = only([]string{v.Feature}, map[string]any{v.Feature: map[string]any{v.Value: v.Example}})
		}
	}
	for overlay, vals := range cases {
		t.Run(overlay, func(t *testing.T) {
			start := time.Now()
			got, err := helmrender.Render(dir, vals)
			if err != nil {
				t.Fatal(err)
			}
			rendered := time.Since(start)
			start = time.Now()
			want, err := gen.Render(root, overlay)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d objects; helm render %v, kubectl kustomize %v", len(want), rendered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			stripKeep(got)
			gotBy, err := helmrender.ByKey(got)
			if err != nil {
				t.Fatal(err)
			}
			wantBy, err := helmrender.ByKey(want)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(helmrender.Keys(wantBy), helmrender.Keys(gotBy)); d != "" {
				t.Errorf("objects differ (-overlay +chart):\n%s", d)
			}
			for k, w := range wantBy {
				if g, ok := gotBy[k]; ok {
					if d := cmp.Diff(w, g); d != "" {
						t.Errorf("%s differs (-overlay +chart):\n%s", k, d)
					}
				}
			}
		})
	}
}

// TestChartIsGenerated: the committed chart is what the generator writes from deploy/ now (`make verify` checks the
// same with git diff).
func TestChartIsGenerated(t *testing.T) {
	root := repoRoot(t)
	files, err := gen.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "charts", "flotilla", rel))
		if err != nil {
			t.Errorf("%s: %v (run: go run ./charts/tools/cmd/genchart)", rel, err)
			continue
		}
		if string(got) != want {
			t.Errorf("charts/flotilla/%s is stale: run go run ./charts/tools/cmd/genchart", rel)
		}
	}
}

// TestSharedObjectsAreKept: the CRDs and namespaces carry helm.sh/resource-policy: keep, so `helm uninstall` (and an
// upgrade turning crds.managed or installation.createNamespace off) leaves them, as the overlays do.
func TestSharedObjectsAreKept(t *testing.T) {
	objs, err := helmrender.Render(chartDir(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if k := o["kind"]; k == "CustomResourceDefinition" || k == "Namespace" {
			n++
			if got := dig(o, "metadata", "annotations", "helm.sh/resource-policy"); got != "keep" {
				t.Errorf("%s: helm.sh/resource-policy %v", helmrender.Key(o), got)
			}
		} else if got := dig(o, "metadata", "annotations", "helm.sh/resource-policy"); got != nil {
			t.Errorf("%s is a feature's object, removed with it, but has helm.sh/resource-policy %v", helmrender.Key(o), got)
		}
	}
	if n < 3 {
		t.Errorf("only %d CRDs and namespaces rendered", n)
	}
}

// TestLint is `helm lint --strict` through the library, with the defaults and with every certificate mode.
func TestLint(t *testing.T) {
	dir := chartDir(t)
	for name, vals := range map[string]map[string]any{
		"defaults":     nil,
		"secret":       {"certificates": map[string]any{"mode": "secret"}},
		"cert-manager": {"certificates": map[string]any{"mode": "cert-manager"}},
	} {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			res := lint.Run([]string{dir}, vals)
			for _, m := range res.Messages {
				t.Logf("%s", m)
			}
			if len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
				t.Fatalf("lint: %d charts linted, errors %v", res.TotalChartsLinted, res.Errors)
			}
		})
	}
}

// TestBadValuesFailTheRender: values the binaries or the API server would refuse later (or a webhook that nothing
// serves) fail at render, and the message names the value.
func TestBadValuesFailTheRender(t *testing.T) {
	dir := chartDir(t)
	for name, tc := range map[string]struct {
		vals map[string]any
		want []string
	}{
		"unknown gate": {map[string]any{"featureGates": "CloneSetShortHash=true,NoSuchGate=true"},
			[]string{"featureGates", `"NoSuchGate"`}},
		"OpenKruise's default gate Flotilla has no use for": {map[string]any{"featureGates": "DaemonWatchingPod=true"},
			[]string{"featureGates", `"DaemonWatchingPod"`}},
		"gate without a boolean": {map[string]any{"featureGates": "CloneSetShortHash=yes"},
			[]string{"featureGates", "CloneSetShortHash=yes"}},
		"pub with no replica": {map[string]any{"pub": map[string]any{"replicas": 0}},
			[]string{"pub.replicas", "at least 1"}},
		"sidecarset with no replica": {map[string]any{"sidecarset": map[string]any{"replicas": 0}},
			[]string{"sidecarset.replicas"}},
		"image without tag or digest": {map[string]any{"cloneset": map[string]any{"image": map[string]any{"tag": ""}}},
			[]string{"cloneset.image", "tag or a digest"}},
		"node agent image without tag or digest": {map[string]any{"daemon": map[string]any{"image": map[string]any{"tag": ""}}},
			[]string{"daemon.image"}},
		"malformed digest": {map[string]any{"pub": map[string]any{"image": map[string]any{"digest": "sha256:abc"}}},
			[]string{"pub.image.digest"}},
		"certificate mode": {map[string]any{"certificates": map[string]any{"mode": "vault"}},
			[]string{"certificates.mode", "vault"}},
		"external certs gate without external certs": {map[string]any{"featureGates": "EnableExternalCerts=true"},
			[]string{"EnableExternalCerts", "certificates.mode"}},
		"timeout": {map[string]any{"webhookConfiguration": map[string]any{"timeoutSeconds": 31}},
			[]string{"webhookConfiguration.timeoutSeconds"}},
		"failure policy": {map[string]any{"webhookConfiguration": map[string]any{"failurePolicy": "Sometimes"}},
			[]string{"webhookConfiguration.failurePolicy", "Sometimes"}},
		"feature failure policy": {map[string]any{"pub": map[string]any{"webhook": map[string]any{"failurePolicy": "fail"}}},
			[]string{"pub.webhook.failurePolicy"}},
		"logging format": {map[string]any{"manager": map[string]any{"loggingFormat": "text"}},
			[]string{"manager.loggingFormat", "text"}},
		"memory limit unit": {map[string]any{"cronjob": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1G"}}}},
			[]string{"cronjob.resources.limits.memory", "Mi or Gi"}},
		"revision namespace not a DNS-1123 label": {map[string]any{"sidecarset": map[string]any{"revisionNamespace": "Kruise_System"}},
			[]string{"sidecarset.revisionNamespace", `"Kruise_System"`, "DNS-1123"}},
		"revision namespace too long": {map[string]any{"sidecarset": map[string]any{"revisionNamespace": strings.Repeat("k", 64)}},
			[]string{"sidecarset.revisionNamespace", "DNS-1123"}},
		"revision namespace not a string": {map[string]any{"sidecarset": map[string]any{"revisionNamespace": 7}},
			[]string{"sidecarset.revisionNamespace", `"7"`}},
		"host network with shared ports": {map[string]any{"manager": map[string]any{"hostNetwork": true}},
			[]string{"manager.hostNetwork", ".metrics.port"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := helmrender.Render(dir, tc.vals)
			if err == nil {
				t.Fatalf("rendered; want an error naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func find(t *testing.T, objs []map[string]any, key string) map[string]any {
	t.Helper()
	by, err := helmrender.ByKey(objs)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := by[key]
	if !ok {
		t.Fatalf("no %s in %v", key, helmrender.Keys(by))
	}
	return o
}

func dig(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := o.(map[string]any)
			o = m[k]
		case int:
			l, _ := o.([]any)
			if k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

func podSpec(t *testing.T, objs []map[string]any, key string) map[string]any {
	t.Helper()
	return dig(find(t, objs, key), "spec", "template", "spec").(map[string]any)
}

func args(t *testing.T, objs []map[string]any, key string) []string {
	t.Helper()
	var out []string
	for _, a := range dig(podSpec(t, objs, key), "containers", 0, "args").([]any) {
		out = append(out, a.(string))
	}
	return out
}

func gateArg(as []string) string {
	for _, a := range as {
		if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			return g
		}
	}
	return ""
}

// TestValues: each value lands where the binaries and the API server read it.
func TestValues(t *testing.T) {
	dir := chartDir(t)
	render := func(t *testing.T, vals map[string]any) []map[string]any {
		t.Helper()
		objs, err := helmrender.Render(dir, vals)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	t.Run("featureGates split per binary", func(t *testing.T) {
		objs := render(t, map[string]any{"featureGates": "CloneSetShortHash=true, PodWebhook=false,KruiseDaemon=false,AllAlpha=false"})
		for dep, want := range map[string]string{
			// With probe (the node agent) installed, the workload controllers get KruiseDaemon=true first, overridden here.
			"cloneset-controller":   "KruiseDaemon=false,CloneSetShortHash=true,AllAlpha=false",
			"pub-controller":        "PodWebhook=false,AllAlpha=false",
			"sidecarset-controller": "PodWebhook=false,KruiseDaemon=false,AllAlpha=false",
			// The overlay's KruiseDaemon=true comes first and is overridden; then the values' gates in their order.
			"probe-controller":   "KruiseDaemon=false,PodWebhook=false,AllAlpha=false",
			"cronjob-controller": "AllAlpha=false",
		} {
			if got := gateArg(args(t, objs, "Deployment flotilla-system/"+dep)); got != want {
				t.Errorf("%s: --feature-gates=%s, want %s", dep, got, want)
			}
		}
		// Without probe, no node agent: the workload controllers keep the binary's default.
		noAgent := render(t, map[string]any{"probe": map[string]any{"enabled": false}})
		for _, dep := range []string{"cloneset-controller", "statefulset-controller", "daemonset-controller"} {
			if got := gateArg(args(t, noAgent, "Deployment flotilla-system/"+dep)); got != "" {
				t.Errorf("%s without probe: --feature-gates=%s, want none", dep, got)
			}
		}
		withAgent := render(t, nil)
		for _, dep := range []string{"cloneset-controller", "statefulset-controller", "daemonset-controller"} {
			if got := gateArg(args(t, withAgent, "Deployment flotilla-system/"+dep)); got != "KruiseDaemon=true" {
				t.Errorf("%s with probe: --feature-gates=%s, want KruiseDaemon=true", dep, got)
			}
		}
		// probe-agent registers KruiseDaemon since it serves ContainerRecreateRequests (issue 28): the overlay's
		// KruiseDaemon=true, overridden by the values', as for probe-controller; the overlay's ImagePullJobGate=true
		// (its NodeImage puller) stays.
		if got := gateArg(args(t, objs, "DaemonSet flotilla-node/probe-agent")); got != "KruiseDaemon=false,ImagePullJobGate=true,AllAlpha=false" {
			t.Errorf("probe-agent: --feature-gates=%s", got)
		}
		objs = render(t, map[string]any{"manager": map[string]any{"log": map[string]any{"level": "4"}, "loggingFormat": "console", "resyncPeriod": "10m"},
			"daemon": map[string]any{"log": map[string]any{"level": 2}}})
		if got := strings.Join(args(t, objs, "Deployment flotilla-system/cronjob-controller"), " "); !strings.HasSuffix(got, "--v=4 --log-format=console --sync-period=10m") {
			t.Errorf("cronjob-controller args: %s", got)
		}
		if got := strings.Join(args(t, objs, "DaemonSet flotilla-node/probe-agent"), " "); !strings.HasSuffix(got, "--v=2 --log-format=console") {
			t.Errorf("probe-agent args: %s", got)
		}
		objs = render(t, map[string]any{"featureGates": "CloneSetShortHash=true"})
		if got := gateArg(args(t, objs, "Deployment flotilla-system/pub-controller")); got != "" {
			t.Errorf("pub-controller gets a gate it does not know: %s", got)
		}
	})

	t.Run("images, replicas, resources, placement", func(t *testing.T) {
		objs := render(t, map[string]any{
			"image":            map[string]any{"registry": "registry.example:5000/"},
			"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
			"cloneset":         map[string]any{"replicas": 3, "image": map[string]any{"digest": digest}, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}},
			"pub":              map[string]any{"image": map[string]any{"tag": "", "digest": digest}},
			"daemon":           map[string]any{"image": map[string]any{"tag": "v1"}, "socketPath": "/var/run/crio/crio.sock", "nodeSelector": map[string]any{"pool": "a"}},
			"manager":          map[string]any{"nodeSelector": map[string]any{"pool": "b"}, "tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}},
		})
		cs := podSpec(t, objs, "Deployment flotilla-system/cloneset-controller")
		if got := dig(cs, "containers", 0, "image"); got != "registry.example:5000/flotilla/cloneset-controller:dev@"+digest {
			t.Errorf("cloneset image %v", got)
		}
		if got := dig(podSpec(t, objs, "Deployment flotilla-system/pub-controller"), "containers", 0, "image"); got != "registry.example:5000/flotilla/pub-controller@"+digest {
			t.Errorf("pub image %v", got)
		}
		if got := dig(find(t, objs, "Deployment flotilla-system/cloneset-controller"), "spec", "replicas"); got != float64(3) {
			t.Errorf("replicas %v", got)
		}
		// Helm merges maps with the defaults: requests stay the overlay's.
		if d := cmp.Diff(map[string]any{"limits": map[string]any{"memory": "1Gi"}, "requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}, dig(cs, "containers", 0, "resources")); d != "" {
			t.Errorf("resources (-want +got):\n%s", d)
		}
		if got := dig(cs, "containers", 0, "env", 1); dig(got, "name") != "GOMEMLIMIT" || dig(got, "value") != "921MiB" {
			t.Errorf("GOMEMLIMIT follows limits.memory (90%% of 1Gi): %v", got)
		}
		if d := cmp.Diff(map[string]any{"pool": "b"}, cs["nodeSelector"]); d != "" {
			t.Errorf("nodeSelector:\n%s", d)
		}
		if d := cmp.Diff([]any{map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"}, map[string]any{"key": "dedicated", "operator": "Exists"}}, cs["tolerations"]); d != "" {
			t.Errorf("tolerations are added to the overlay's:\n%s", d)
		}
		if d := cmp.Diff([]any{map[string]any{"name": "regcred"}}, cs["imagePullSecrets"]); d != "" {
			t.Errorf("imagePullSecrets:\n%s", d)
		}
		agent := podSpec(t, objs, "DaemonSet flotilla-node/probe-agent")
		if got := dig(agent, "containers", 0, "image"); got != "registry.example:5000/flotilla/probe-agent:v1" {
			t.Errorf("agent image %v", got)
		}
		if got := dig(agent, "volumes", 0, "hostPath", "path"); got != "/var/run/crio/crio.sock" {
			t.Errorf("agent socket %v", got)
		}
		if d := cmp.Diff(map[string]any{"pool": "a"}, agent["nodeSelector"]); d != "" {
			t.Errorf("agent nodeSelector:\n%s", d)
		}
	})

	t.Run("webhook settings", func(t *testing.T) {
		objs := render(t, map[string]any{
			"webhookConfiguration": map[string]any{"timeoutSeconds": 5, "excludedNamespaces": []any{"tenant-a"}},
			"sidecarset":           map[string]any{"webhook": map[string]any{"failurePolicy": "Ignore"}},
			"externalCerts":        map[string]any{"annotations": map[string]any{"example.com/injector": "on"}},
		})
		mut := find(t, objs, "MutatingWebhookConfiguration /flotilla-sidecarset")
		if got := dig(mut, "webhooks", 0, "failurePolicy"); got != "Ignore" {
			t.Errorf("sidecarset failurePolicy %v", got)
		}
		if got := dig(mut, "webhooks", 0, "timeoutSeconds"); got != float64(5) {
			t.Errorf("timeoutSeconds %v", got)
		}
		if got := dig(mut, "metadata", "annotations", "example.com/injector"); got != "on" {
			t.Errorf("annotations %v", dig(mut, "metadata"))
		}
		want := map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"tenant-a"}}
		if d := cmp.Diff(want, dig(mut, "webhooks", 0, "namespaceSelector", "matchExpressions", 1)); d != "" {
			t.Errorf("sidecarset exclusion:\n%s", d)
		}
		pub := find(t, objs, "ValidatingWebhookConfiguration /flotilla-pub")
		for i := 0; i < 3; i++ {
			if got := dig(pub, "webhooks", i, "failurePolicy"); got != "Fail" {
				t.Errorf("pub webhook %d failurePolicy %v", i, got)
			}
		}
		if d := cmp.Diff(want, dig(pub, "webhooks", 0, "namespaceSelector", "matchExpressions", 1)); d != "" {
			t.Errorf("pub exclusion:\n%s", d)
		}
		if got := dig(pub, "webhooks", 2, "namespaceSelector"); got != nil {
			t.Errorf("the budget webhook selects no namespaces, so it takes no exclusion: %v", got)
		}
	})

	t.Run("host network, ports", func(t *testing.T) {
		vals := map[string]any{"manager": map[string]any{"hostNetwork": true}}
		for i, f := range gen.Features {
			vals[f] = map[string]any{"metrics": map[string]any{"port": 18080 + 10*i}, "healthProbe": map[string]any{"port": 18081 + 10*i},
				"webhook": map[string]any{"port": 18082 + 10*i}}
		}
		vals["pub"] = merge(vals["pub"], map[string]any{"webhook": map[string]any{"port": 19443}})
		vals["sidecarset"] = merge(vals["sidecarset"], map[string]any{"webhook": map[string]any{"port": 9443}})
		objs := render(t, vals)
		pub := podSpec(t, objs, "Deployment flotilla-system/pub-controller")
		if pub["hostNetwork"] != true || pub["dnsPolicy"] != "ClusterFirstWithHostNet" {
			t.Errorf("hostNetwork %v dnsPolicy %v", pub["hostNetwork"], pub["dnsPolicy"])
		}
		as := strings.Join(args(t, objs, "Deployment flotilla-system/pub-controller"), " ")
		for _, w := range []string{"--metrics-bind-address=:18120", "--health-probe-bind-address=:18121", "--webhook-port=19443"} {
			if !strings.Contains(as, w) {
				t.Errorf("pub args %s lack %s", as, w)
			}
		}
		if got := dig(pub, "containers", 0, "ports", 2, "containerPort"); got != float64(19443) {
			t.Errorf("webhook containerPort %v", got)
		}
		// Host namespaces break Pod Security "baseline": the controllers' namespace enforces "privileged" then.
		for _, l := range []string{"enforce", "warn", "audit"} {
			if got := dig(find(t, objs, "Namespace /flotilla-system"), "metadata", "labels", "pod-security.kubernetes.io/"+l); got != "privileged" {
				t.Errorf("flotilla-system pod-security %s: %v", l, got)
			}
		}
		if strings.Contains(strings.Join(args(t, objs, "Deployment flotilla-system/sidecarset-controller"), " "), "--webhook-port") {
			t.Error("sidecarset on the default port gets no --webhook-port")
		}
	})

	t.Run("sidecarset revision namespace", func(t *testing.T) {
		objs := render(t, map[string]any{"sidecarset": map[string]any{"revisionNamespace": "legacy-kruise"}})
		as := args(t, objs, "Deployment flotilla-system/sidecarset-controller")
		if n := len(as); n == 0 || as[n-1] != "--revision-namespace=legacy-kruise" {
			t.Errorf("sidecarset-controller args %v: want --revision-namespace=legacy-kruise last", as)
		}
		find(t, objs, "Role legacy-kruise/flotilla:sidecarset-controller:revisions")
		rb := find(t, objs, "RoleBinding legacy-kruise/flotilla:sidecarset-controller:revisions")
		want := []any{map[string]any{"kind": "ServiceAccount", "name": "sidecarset-controller", "namespace": "flotilla-system"}}
		if d := cmp.Diff(want, rb["subjects"]); d != "" {
			t.Errorf("RoleBinding subjects (-want +got):\n%s", d)
		}
		// The webhook's Role (its certificate Secret) stays with the controller.
		find(t, objs, "Role flotilla-system/flotilla:sidecarset-controller:webhook")
		objs = render(t, nil)
		find(t, objs, "Role flotilla-system/flotilla:sidecarset-controller:revisions")
		for _, a := range args(t, objs, "Deployment flotilla-system/sidecarset-controller") {
			if strings.HasPrefix(a, "--revision-namespace") {
				t.Errorf("default: %s", a)
			}
		}
	})

	for _, mode := range []string{"secret", "cert-manager"} {
		t.Run("certificates "+mode, func(t *testing.T) {
			objs := render(t, map[string]any{"certificates": map[string]any{"mode": mode},
				"pub": map[string]any{"webhook": map[string]any{"certSecretName": "my-pub-tls"}}})
			for dep, secret := range map[string]string{"pub-controller": "my-pub-tls", "sidecarset-controller": "sidecarset-controller-webhook-tls"} {
				pod := podSpec(t, objs, "Deployment flotilla-system/"+dep)
				if got := dig(pod, "volumes", 0, "secret", "secretName"); got != secret {
					t.Errorf("%s: certificate volume %v", dep, pod["volumes"])
				}
				if got := dig(pod, "containers", 0, "volumeMounts", 0, "mountPath"); got != "/etc/flotilla/webhook-certs" {
					t.Errorf("%s: mount %v", dep, got)
				}
				if !strings.Contains(strings.Join(args(t, objs, "Deployment flotilla-system/"+dep), " "), "--webhook-cert-dir=/etc/flotilla/webhook-certs") {
					t.Errorf("%s: no --webhook-cert-dir", dep)
				}
			}
			if got := dig(podSpec(t, objs, "Deployment flotilla-system/cloneset-controller"), "volumes"); got != nil {
				t.Errorf("cloneset has no webhook, no certificate volume: %v", got)
			}
			ann := dig(find(t, objs, "ValidatingWebhookConfiguration /flotilla-pub"), "metadata", "annotations", "cert-manager.io/inject-ca-from")
			by, _ := helmrender.ByKey(objs)
			_, hasCert := by["Certificate flotilla-system/pub-controller-webhook"]
			if mode == "cert-manager" {
				if ann != "flotilla-system/pub-controller-webhook" || !hasCert {
					t.Errorf("cert-manager: annotation %v, Certificate %v", ann, hasCert)
				}
				c := find(t, objs, "Certificate flotilla-system/pub-controller-webhook")
				if dig(c, "spec", "secretName") != "my-pub-tls" || dig(c, "spec", "dnsNames", 0) != "pub-controller-webhook.flotilla-system.svc" {
					t.Errorf("Certificate %v", c["spec"])
				}
				// A CRD converted by a webhook gets its caBundle from the same certificates.
				for _, o := range objs {
					if svc, ok := dig(o, "spec", "conversion", "webhook", "clientConfig", "service", "name").(string); ok && o["kind"] == "CustomResourceDefinition" {
						// The binary's Certificate (<binary>-webhook), whichever of its Services converts, and it
						// covers that Service's name (sidecarset-controller-conversion: issue 23).
						binary := strings.TrimSuffix(strings.TrimSuffix(svc, "-webhook"), "-conversion")
						if got := dig(o, "metadata", "annotations", "cert-manager.io/inject-ca-from"); got != "flotilla-system/"+binary+"-webhook" {
							t.Errorf("%s converted by %s: inject-ca-from %v", helmrender.Key(o), svc, got)
						}
						cert := find(t, objs, "Certificate flotilla-system/"+binary+"-webhook")
						names, _ := dig(cert, "spec", "dnsNames").([]any)
						if !slices.Contains(names, any(svc+".flotilla-system.svc")) {
							t.Errorf("Certificate of %s: dnsNames %v lack the conversion Service %s", binary, names, svc)
						}
					}
				}
			} else if ann != nil || hasCert {
				t.Errorf("secret: annotation %v, Certificate %v", ann, hasCert)
			}
		})
	}
}
