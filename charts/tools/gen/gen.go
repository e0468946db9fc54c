// Package gen writes charts/flotilla from the kustomize overlays in deploy/: every object an overlay renders becomes
// the same object in the chart, with Helm template expressions put in at known paths (image, replicas, resources,
// ports, feature gates, webhook settings, ...). The chart therefore cannot drift from deploy/: `make verify` runs the
// generator again and fails on a diff, and charts/tools' tests render both and compare them object by object.
package gen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Features are the per-feature overlays (deploy/overlays/<name>), in README order; each is a switch of the chart.
var Features = []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "deletionprotection", "resourcedistribution", "containerrecreate", "imagepulljob", "uniteddeployment", "launchpriority", "workloadspread", "persistentpodstate"}

// AgentSection is the values section of the node agent (probe-agent), OpenKruise's name for kruise-daemon's.
const AgentSection = "daemon"

const (
	agentName     = "probe-agent"
	webhookLabel  = "flotilla.dev/webhook"
	keepPolicy    = "helm.sh/resource-policy"
	defaultWHPort = 9443 // kit/webhook DefaultOptions
)

// Render runs `kubectl kustomize` on deploy/overlays/<overlay> of the checkout at root.
func Render(root, overlay string) ([]map[string]any, error) {
	cmd := exec.Command("kubectl", "kustomize", filepath.Join(root, "deploy", "overlays", overlay))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/overlays/%s: %w: %s", overlay, err, stderr.String())
	}
	return SplitYAML(out)
}

// SplitYAML parses a multi-document YAML stream into objects (empty documents skipped).
func SplitYAML(data []byte) ([]map[string]any, error) {
	var objs []map[string]any
	for _, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(part), &obj); err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// defaults collects, per values section, what the overlays set: the chart's default values are exactly these.
type defaults struct {
	Sections map[string]*section
	// Webhook configurations' settings, the same in every overlay (checked).
	TimeoutSeconds any
	FailurePolicy  string
}

type section struct {
	Name, Feature, Binary string
	// Services selecting the binary's pods: the cert-manager Certificate covers their DNS names (the admission
	// Service and, for sidecarset-controller, its conversion Service).
	Services           []string
	Replicas           any
	Repository, Tag    string
	Resources          any
	MetricsPort        any
	HealthPort         any
	WebhookPort        any // nil: no webhook
	SocketPath         string
	MaxConcurrentExecs string
}

// Generate writes the chart under root/charts/flotilla.
func Generate(root string) error { return GenerateTo(root, filepath.Join(root, "charts", "flotilla")) }

// GenerateTo writes the generated files of the chart into out (the hand-written ones are not touched).
func GenerateTo(root, out string) error {
	g := &generator{root: root, out: out, d: defaults{Sections: map[string]*section{}}}
	return g.run()
}

// Files are the generated files of the chart, relative to its directory, as Generate would write them.
func Files(root string) (map[string]string, error) {
	g := &generator{root: root, out: filepath.Join(root, "charts", "flotilla"), d: defaults{Sections: map[string]*section{}}, dry: true}
	if err := g.run(); err != nil {
		return nil, err
	}
	return g.files, nil
}

type generator struct {
	root, out string
	d         defaults
	files     map[string]string
	dry       bool // compute files only
}

func (g *generator) run() error {
	g.files = map[string]string{}
	for _, f := range Features {
		objs, err := Render(g.root, f)
		if err != nil {
			return err
		}
		edits := map[int][]variantEdit{}
		for _, v := range variantsOf(f) {
			vobjs, err := Render(g.root, v.Overlay)
			if err != nil {
				return err
			}
			es, err := variantEdits(v, objs, vobjs)
			if err != nil {
				return err
			}
			for i, e := range es {
				edits[i] = append(edits[i], e...)
			}
		}
		text, err := g.feature(f, objs, edits)
		if err != nil {
			return fmt.Errorf("feature %s: %w", f, err)
		}
		g.files[filepath.Join("templates", f+".yaml")] = text
	}
	if err := g.shared("namespace", "installation.createNamespace", "namespace.yaml"); err != nil {
		return err
	}
	if err := g.shared("crds", "crds.managed", "crds.yaml"); err != nil {
		return err
	}
	gates, err := knownGates(g.root)
	if err != nil {
		return err
	}
	g.files[filepath.Join("templates", "_generated.tpl")] = gates + g.sectionsTpl() + variantsTpl()
	values, err := g.values()
	if err != nil {
		return err
	}
	g.files["values.yaml"] = values
	readme, err := Readme(values)
	if err != nil {
		return err
	}
	g.files["README.md"] = readme
	if g.dry {
		return nil
	}
	// Remove generated templates that no longer have a source (a feature dropped from the list).
	old, _ := filepath.Glob(filepath.Join(g.out, "templates", "*.yaml"))
	for _, p := range old {
		rel, _ := filepath.Rel(g.out, p)
		if _, ok := g.files[rel]; !ok && isGenerated(p) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for rel, text := range g.files {
		p := filepath.Join(g.out, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

const header = "# Generated by charts/tools/cmd/genchart from %s: do not edit (edit deploy/ or the generator).\n"

func isGenerated(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.HasPrefix(b, []byte("# Generated by charts/tools/cmd/genchart"))
}

// shared writes the namespace or CRD overlay as one template behind a switch, each object kept by helm uninstall
// (as the overlays keep them: installed once, removed only on purpose).
func (g *generator) shared(overlay, switchValue, file string) error {
	objs, err := Render(g.root, overlay)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, header, "deploy/overlays/"+overlay)
	fmt.Fprintf(&b, "{{- if .Values.%s }}\n", switchValue)
	for _, obj := range objs {
		md := getMap(obj, "metadata")
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann[keepPolicy] = "keep"
		md["annotations"] = ann
		d := &doc{obj: obj}
		if obj["kind"] == "CustomResourceDefinition" {
			if err := conversionAnnotations(d); err != nil {
				return err
			}
		}
		// The controllers' namespace: on the host network (manager.hostNetwork) its pods break Pod Security
		// "baseline", so it enforces "privileged" then instead of the overlay's level.
		if obj["kind"] == "Namespace" && md["name"] == "flotilla-system" {
			labels, _ := md["labels"].(map[string]any)
			for k, v := range labels {
				if strings.HasPrefix(k, "pod-security.kubernetes.io/") && !strings.HasSuffix(k, "-version") {
					labels[k] = d.Inline(fmt.Sprintf("{{ if $.Values.manager.hostNetwork }}privileged{{ else }}%v{{ end }}", v))
				}
			}
		}
		text, err := d.render()
		if err != nil {
			return err
		}
		b.WriteString("---\n" + text)
	}
	b.WriteString("{{- end }}\n")
	g.files[filepath.Join("templates", file)] = b.String()
	return nil
}

// feature turns the objects of deploy/overlays/<f> into templates/<f>.yaml, all behind <f>.enabled, with the
// variants' edits (per index into objs) in.
func (g *generator) feature(f string, objs []map[string]any, edits map[int][]variantEdit) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, header, "deploy/overlays/"+f)
	fmt.Fprintf(&b, "{{- if .Values.%s.enabled }}\n", f)
	// The webhook binaries of this feature: their configurations take the certificate annotations.
	webhookBinary := ""
	for _, obj := range objs {
		if obj["kind"] == "Deployment" && getMap(obj, "metadata", "labels")[webhookLabel] == "true" {
			webhookBinary = getMap(obj, "metadata")["name"].(string)
		}
	}
	for i, obj := range objs {
		d := &doc{obj: obj}
		var err error
		switch obj["kind"] {
		case "Deployment":
			err = g.deployment(d, f)
		case "DaemonSet":
			err = g.agent(d, f)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			err = g.webhookConfiguration(d, f, webhookBinary)
		}
		for _, e := range edits[i] {
			if err == nil {
				err = e.apply(d)
			}
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", describe(obj), err)
		}
		text, err := d.render()
		if err != nil {
			return "", err
		}
		b.WriteString("---\n" + text)
	}
	if sec := g.d.Sections[f]; sec != nil {
		for _, obj := range objs {
			if obj["kind"] == "Service" && getMap(obj, "spec", "selector")["app.kubernetes.io/name"] == sec.Binary {
				sec.Services = append(sec.Services, getMap(obj, "metadata")["name"].(string))
			}
		}
	}
	b.WriteString("{{- end }}\n")
	return b.String(), nil
}

func container(obj map[string]any) (map[string]any, error) {
	cs := getList(obj, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		return nil, fmt.Errorf("want one container, found %d", len(cs))
	}
	return cs[0].(map[string]any), nil
}

func splitImage(image string) (repo, tag string, err error) {
	if strings.Contains(image, "@") {
		return "", "", fmt.Errorf("image %q: the overlays name images by tag; a digest is the installer's choice", image)
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", "", fmt.Errorf("image %q has no tag", image)
	}
	return image[:i], image[i+1:], nil
}

// ports templates the bind-address args and the container ports named metrics, health and webhook.
func ports(d *doc, c map[string]any, sec string, s *section) error {
	args, _ := c["args"].([]any)
	for i, a := range args {
		str, _ := a.(string)
		for flag, key := range map[string]string{"--metrics-bind-address=:": "metrics", "--health-probe-bind-address=:": "healthProbe"} {
			if port, ok := strings.CutPrefix(str, flag); ok {
				args[i] = flag + d.Inline(fmt.Sprintf("{{ $.Values.%s.%s.port }}", sec, key))
				if key == "metrics" {
					s.MetricsPort = port
				} else {
					s.HealthPort = port
				}
			}
		}
	}
	for _, p := range getListOf(c, "ports") {
		switch p["name"] {
		case "metrics":
			p["containerPort"] = d.Inline(fmt.Sprintf("{{ $.Values.%s.metrics.port }}", sec))
		case "health":
			p["containerPort"] = d.Inline(fmt.Sprintf("{{ $.Values.%s.healthProbe.port }}", sec))
		case "webhook":
			s.WebhookPort = p["containerPort"]
			p["containerPort"] = d.Inline(fmt.Sprintf("{{ $.Values.%s.webhook.port }}", sec))
		}
	}
	if s.MetricsPort == nil || s.HealthPort == nil {
		return fmt.Errorf("no --metrics-bind-address=:<port> or --health-probe-bind-address=:<port> arg")
	}
	return nil
}

func getListOf(m map[string]any, key string) []map[string]any {
	l, _ := m[key].([]any)
	var out []map[string]any
	for _, e := range l {
		if em, ok := e.(map[string]any); ok {
			out = append(out, em)
		}
	}
	return out
}

// extraArgs replaces the overlay's --feature-gates arg (if any) by a list token that emits the merged gates and
// the webhook flags the values ask for.
func extraArgs(d *doc, c map[string]any, sec, binary string, webhook bool) {
	args, _ := c["args"].([]any)
	base := ""
	var kept []any
	for _, a := range args {
		if str, ok := a.(string); ok && strings.HasPrefix(str, "--feature-gates=") {
			base = strings.TrimPrefix(str, "--feature-gates=")
			continue
		}
		kept = append(kept, a)
	}
	kept = append(kept, d.Line(func(indent int) string {
		return fmt.Sprintf("{{- range (include \"flotilla.args\" (dict \"root\" $ \"section\" %q \"binary\" %q \"gates\" %q \"webhook\" %t) | fromYamlArray) }}\n%s- {{ . | quote }}\n{{- end }}\n",
			sec, binary, base, webhook, pad(indent))
	}))
	c["args"] = kept
}

func (g *generator) deployment(d *doc, f string) error {
	obj := d.obj
	name := getMap(obj, "metadata")["name"].(string)
	if name != f+"-controller" {
		return fmt.Errorf("the overlay's Deployment is %s, want %s-controller (values section %s)", name, f, f)
	}
	webhook := getMap(obj, "metadata", "labels")[webhookLabel] == "true"
	s := &section{Name: f, Feature: f, Binary: name}
	g.d.Sections[f] = s
	spec := getMap(obj, "spec")
	s.Replicas = spec["replicas"]
	spec["replicas"] = d.Inline(fmt.Sprintf("{{ $.Values.%s.replicas }}", f))
	c, err := container(obj)
	if err != nil {
		return err
	}
	if err := fromValues(d, c, f, s); err != nil {
		return err
	}
	if webhook && s.WebhookPort == nil {
		return fmt.Errorf("labelled %s=true without a container port named webhook", webhookLabel)
	}
	extraArgs(d, c, f, name, webhook)
	c[d.Line(extras("flotilla.containerExtras", f, webhook))] = nil
	pod := getMap(obj, "spec", "template", "spec")
	pod[d.Line(extras("flotilla.podExtras", f, webhook))] = nil
	tolerations(d, pod, "$.Values.manager.tolerations")
	return nil
}

// fromValues makes the container's image, resources, ports and GOMEMLIMIT
// come from values section sec, recording the overlay's own in s (the
// values' defaults).
func fromValues(d *doc, c map[string]any, sec string, s *section) error {
	var err error
	if s.Repository, s.Tag, err = splitImage(c["image"].(string)); err != nil {
		return err
	}
	c["image"] = d.Inline(fmt.Sprintf("{{ include \"flotilla.image\" (dict \"root\" $ \"section\" %q) }}", sec))
	s.Resources = c["resources"]
	c["resources"] = d.Value(func(indent int) string {
		return fmt.Sprintf("{{ toYaml $.Values.%s.resources | nindent %d }}", sec, indent+2)
	})
	if err := ports(d, c, sec, s); err != nil {
		return err
	}
	return gomemlimit(d, c, sec)
}

// extras is a key token whose line becomes the mapping the named helper renders (nothing when it renders nothing).
func extras(helper, sec string, webhook bool) func(int) string {
	return func(indent int) string {
		return fmt.Sprintf("{{- with (include %q (dict \"root\" $ \"section\" %q \"webhook\" %t) | trim) }}{{ . | nindent %d }}{{- end }}\n",
			helper, sec, webhook, indent)
	}
}

// tolerations appends the values' tolerations to the overlay's.
func tolerations(d *doc, pod map[string]any, values string) {
	emit := func(indent int) string {
		return fmt.Sprintf("{{- with %s }}{{ toYaml . | nindent %d }}{{- end }}\n", values, indent)
	}
	if l, ok := pod["tolerations"].([]any); ok {
		pod["tolerations"] = append(l, d.Line(emit))
		return
	}
	pod[d.Line(func(indent int) string {
		return fmt.Sprintf("{{- with %s }}\n%stolerations:{{ toYaml . | nindent %d }}\n{{- end }}\n", values, pad(indent), indent)
	})] = nil
}

func (g *generator) agent(d *doc, f string) error {
	obj := d.obj
	name := getMap(obj, "metadata")["name"].(string)
	if name != agentName {
		return fmt.Errorf("unexpected DaemonSet %s (the chart knows the node agent %s)", name, agentName)
	}
	sec := AgentSection
	s := &section{Name: sec, Feature: f, Binary: name}
	g.d.Sections[sec] = s
	c, err := container(obj)
	if err != nil {
		return err
	}
	if err := fromValues(d, c, sec, s); err != nil {
		return err
	}
	args, _ := c["args"].([]any)
	for i, a := range args {
		if v, ok := strings.CutPrefix(a.(string), "--max-concurrent-execs="); ok {
			s.MaxConcurrentExecs = v
			args[i] = "--max-concurrent-execs=" + d.Inline(fmt.Sprintf("{{ $.Values.%s.maxConcurrentExecs }}", sec))
		}
	}
	if s.MaxConcurrentExecs == "" {
		return fmt.Errorf("no --max-concurrent-execs arg")
	}
	extraArgs(d, c, sec, name, false)
	// The CRI socket: the node's path is the values'; inside the container it stays where the args name it.
	for _, v := range getListOf(getMap(obj, "spec", "template", "spec"), "volumes") {
		if hp, ok := v["hostPath"].(map[string]any); ok && hp["type"] == "Socket" {
			s.SocketPath = hp["path"].(string)
			hp["path"] = d.Inline(fmt.Sprintf("{{ $.Values.%s.socketPath | quote }}", sec))
		}
	}
	if s.SocketPath == "" {
		return fmt.Errorf("no hostPath volume of type Socket (the CRI socket)")
	}
	pod := getMap(obj, "spec", "template", "spec")
	pod[d.Line(extras("flotilla.agentPodExtras", sec, false))] = nil
	return nil
}

func (g *generator) webhookConfiguration(d *doc, f, binary string) error {
	if binary == "" {
		return fmt.Errorf("no Deployment labelled %s=true serves it", webhookLabel)
	}
	md := getMap(d.obj, "metadata")
	if _, ok := md["annotations"]; ok {
		return fmt.Errorf("has annotations: the generator would have to merge the values' into them")
	}
	md[d.Line(func(indent int) string {
		return fmt.Sprintf("{{- with (include \"flotilla.webhookAnnotations\" (dict \"root\" $ \"section\" %q \"binary\" %q)) }}\n%sannotations:{{ . | nindent %d }}\n{{- end }}\n",
			f, binary, pad(indent), indent+2)
	})] = nil
	for _, w := range getListOf(d.obj, "webhooks") {
		fp, _ := w["failurePolicy"].(string)
		if g.d.FailurePolicy != "" && fp != g.d.FailurePolicy {
			return fmt.Errorf("webhook %v: failurePolicy %q, others %q: the chart has one default", w["name"], fp, g.d.FailurePolicy)
		}
		g.d.FailurePolicy = fp
		w["failurePolicy"] = d.Inline(fmt.Sprintf("{{ include \"flotilla.failurePolicy\" (dict \"root\" $ \"section\" %q) }}", f))
		if g.d.TimeoutSeconds != nil && fmt.Sprint(w["timeoutSeconds"]) != fmt.Sprint(g.d.TimeoutSeconds) {
			return fmt.Errorf("webhook %v: timeoutSeconds %v, others %v: the chart has one default", w["name"], w["timeoutSeconds"], g.d.TimeoutSeconds)
		}
		g.d.TimeoutSeconds = w["timeoutSeconds"]
		w["timeoutSeconds"] = d.Inline("{{ $.Values.webhookConfiguration.timeoutSeconds }}")
		// Namespace exclusions go to the webhooks that select namespaces (those intercepting pods).
		if sel, ok := w["namespaceSelector"].(map[string]any); ok {
			exprs, _ := sel["matchExpressions"].([]any)
			sel["matchExpressions"] = append(exprs, d.Line(func(indent int) string {
				return fmt.Sprintf("{{- with $.Values.webhookConfiguration.excludedNamespaces }}\n%s- {key: kubernetes.io/metadata.name, operator: NotIn, values: {{ toJson . }}}\n{{- end }}\n", pad(indent))
			}))
		}
	}
	return nil
}

// knownGates writes templates/_gates.tpl: per binary the feature gates it accepts, from kit/README.md's table
// (generated from each binary's --help by hack/gen-flags-doc.sh, which `make verify` checks).
func knownGates(root string) (string, error) {
	readme, err := os.ReadFile(filepath.Join(root, "kit", "README.md"))
	if err != nil {
		return "", err
	}
	text := string(readme)
	begin, end := strings.Index(text, "<!-- BEGIN per-binary"), strings.Index(text, "<!-- END per-binary -->")
	if begin < 0 || end < begin {
		return "", fmt.Errorf("kit/README.md: no BEGIN/END per-binary markers around the flags-and-gates table")
	}
	text = text[begin:end]
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| ([^|]*) \\|")
	gate := regexp.MustCompile("`([A-Za-z0-9]+)=(true|false)`")
	var b strings.Builder
	b.WriteString("{{- /* Generated by charts/tools/cmd/genchart from kit/README.md (each binary's --help): do not edit. */ -}}\n")
	b.WriteString("{{- /* The feature gates each binary accepts (AllAlpha and AllBeta: every binary). */ -}}\n")
	b.WriteString("{{- define \"flotilla.knownGates\" -}}\n")
	n := 0
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		var names []string
		for _, gm := range gate.FindAllStringSubmatch(m[2], -1) {
			names = append(names, gm[1])
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%s: [%s]\n", m[1], strings.Join(names, ", "))
		n++
	}
	if n < len(Features)+1 {
		return "", fmt.Errorf("kit/README.md: found %d binaries in the flags-and-gates table, want %d", n, len(Features)+1)
	}
	b.WriteString("{{- end -}}\n")
	return b.String(), nil
}

// sectionsTpl defines flotilla.sections: per values section, its feature, binary, whether it serves webhooks and the
// Services in front of it (the validation and the cert-manager Certificates go over them).
func (g *generator) sectionsTpl() string {
	var b strings.Builder
	b.WriteString("{{- /* Per values section: the feature switching it, its binary, whether it serves webhooks, the Services in front of it. */ -}}\n")
	b.WriteString("{{- define \"flotilla.sections\" -}}\n")
	names := append([]string{}, Features...)
	names = append(names, AgentSection)
	for _, n := range names {
		s := g.d.Sections[n]
		fmt.Fprintf(&b, "%s: {feature: %s, binary: %s, webhook: %t, services: [%s]}\n", n, s.Feature, s.Binary, s.WebhookPort != nil, strings.Join(s.Services, ", "))
	}
	b.WriteString("{{- end -}}\n")
	return b.String()
}

// gomemlimit derives the GOMEMLIMIT env (the Go runtime's soft limit, ~90% of limits.memory in the overlays) from the
// values' limits.memory, so that changing the one changes the other.
func gomemlimit(d *doc, c map[string]any, sec string) error {
	for _, e := range getListOf(c, "env") {
		if e["name"] == "GOMEMLIMIT" {
			e["value"] = d.Inline(fmt.Sprintf("{{ include \"flotilla.gomemlimit\" (dict \"root\" $ \"section\" %q \"default\" %q) | quote }}", sec, e["value"]))
			return nil
		}
	}
	return fmt.Errorf("no GOMEMLIMIT env")
}

// conversionAnnotations gives a CRD converted by a webhook the annotations of webhook configurations
// (externalCerts.annotations, cert-manager's CA injection): its caBundle comes from the same certificates.
func conversionAnnotations(d *doc) error {
	svc := getMap(d.obj, "spec", "conversion", "webhook", "clientConfig", "service")
	if svc == nil {
		return nil
	}
	name, _ := svc["name"].(string)
	// <binary>-webhook, or <binary>-conversion: a Service of its own publishing not-ready addresses (issue 23); the
	// same certificates either way (the Certificate <binary>-webhook covers both).
	binary, ok := strings.CutSuffix(name, "-webhook")
	if !ok {
		binary, ok = strings.CutSuffix(name, "-conversion")
	}
	if !ok {
		return fmt.Errorf("%s: conversion Service %q is not <binary>-webhook or <binary>-conversion", describe(d.obj), name)
	}
	ann := getMap(d.obj, "metadata", "annotations")
	ann[d.Line(func(indent int) string {
		return fmt.Sprintf("{{- with (include \"flotilla.webhookAnnotations\" (dict \"root\" $ \"binary\" %q)) }}{{ . | nindent %d }}{{- end }}\n", binary, indent)
	})] = nil
	return nil
}
