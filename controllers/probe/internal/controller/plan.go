package controller

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// ProbeName is the name of a marker's probe in a NodePodProbe.
func ProbeName(ppm, probe string) string { return ppm + "#" + probe }

// splitProbeName is ProbeName's inverse.
func splitProbeName(name string) (ppm, probe string, ok bool) {
	return strings.Cut(name, "#")
}

// podActive: not terminating and not finished; only such pods are probed.
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// selects says whether live marker m selects pod p.
func selects(m *appsv1alpha1.PodProbeMarker, p *corev1.Pod) bool {
	if m.DeletionTimestamp != nil || m.Namespace != p.Namespace || m.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(m.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(p.Labels))
}

// desiredPodProbes is what a node's NodePodProbe lists for pods (those bound
// to the node) and markers: one entry per active pod some marker selects,
// its probes "<marker>#<probe>" in marker then spec order, named ports
// resolved against the pod's container. Sorted by namespace and name.
func desiredPodProbes(pods []*corev1.Pod, markers []*appsv1alpha1.PodProbeMarker) []appsv1alpha1.PodProbe {
	ms := append([]*appsv1alpha1.PodProbeMarker(nil), markers...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Namespace+"/"+ms[i].Name < ms[j].Namespace+"/"+ms[j].Name })
	var out []appsv1alpha1.PodProbe
	for _, p := range pods {
		if !podActive(p) {
			continue
		}
		var probes []appsv1alpha1.ContainerProbe
		for _, m := range ms {
			if !selects(m, p) {
				continue
			}
			for _, pr := range m.Spec.Probes {
				spec, ok := resolvePorts(pr.Probe, podutil.Container(p, pr.ContainerName))
				if !ok {
					continue
				}
				probes = append(probes, appsv1alpha1.ContainerProbe{Name: ProbeName(m.Name, pr.Name), ContainerName: pr.ContainerName, Probe: spec})
			}
		}
		if len(probes) == 0 {
			continue
		}
		out = append(out, appsv1alpha1.PodProbe{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), IP: p.Status.PodIP, Probes: probes})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// resolvePorts returns probe with a named httpGet/tcpSocket port replaced by
// the container's port number; false if the container is missing or the
// name is not one of its ports (the probe cannot run on this pod).
func resolvePorts(probe appsv1alpha1.ContainerProbeSpec, c *corev1.Container) (appsv1alpha1.ContainerProbeSpec, bool) {
	if c == nil {
		return probe, false
	}
	out := *probe.DeepCopy()
	resolve := func(port *intstr.IntOrString) bool {
		if port.Type != intstr.String {
			return true
		}
		for _, cp := range c.Ports {
			if cp.Name == port.StrVal {
				*port = intstr.FromInt32(cp.ContainerPort)
				return true
			}
		}
		return false
	}
	if out.HTTPGet != nil && !resolve(&out.HTTPGet.Port) {
		return probe, false
	}
	if out.TCPSocket != nil && !resolve(&out.TCPSocket.Port) {
		return probe, false
	}
	return out, true
}

// mergeSpec replaces the entries of the namespaces in scope with desired and
// keeps the others (a reconciler restricted to one namespace must not
// drop other namespaces' pods from a cluster-scoped object).
func mergeSpec(existing []appsv1alpha1.PodProbe, desired []appsv1alpha1.PodProbe, inScope func(string) bool) []appsv1alpha1.PodProbe {
	var out []appsv1alpha1.PodProbe
	for _, e := range existing {
		if !inScope(e.Namespace) {
			out = append(out, e)
		}
	}
	out = append(out, desired...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// markPod applies the probe states of pod (one NodePodProbe status entry)
// to a copy of it: per state the marker policy of that state is set and the
// keys of the policies of other states are removed, so an Unknown state
// (which no policy names) removes them all; the probe's podConditionType
// becomes True (Succeeded) or False (Failed, Unknown) with the state's
// times and message. An empty state leaves the pod alone. It returns nil
// when nothing changes, so no write is made.
func markPod(pod *corev1.Pod, states []appsv1alpha1.ContainerProbeState, markers map[string]*appsv1alpha1.PodProbeMarker) *corev1.Pod {
	out := pod.DeepCopy()
	seenCondition := map[string]bool{}
	for _, st := range states {
		if st.State == "" {
			continue
		}
		probe := findProbe(markers, st.Name)
		if probe == nil {
			continue
		}
		for _, pol := range probe.MarkerPolicy {
			if pol.State == st.State {
				continue
			}
			for k := range pol.Labels {
				delete(out.Labels, k)
			}
			for k := range pol.Annotations {
				delete(out.Annotations, k)
			}
		}
		for _, pol := range probe.MarkerPolicy {
			if pol.State != st.State {
				continue
			}
			out.Labels = setAll(out.Labels, pol.Labels)
			out.Annotations = setAll(out.Annotations, pol.Annotations)
		}
		// The first probe owning a condition type wins (OpenKruise logs the
		// conflict and keeps the first).
		if ct := probe.PodConditionType; ct != "" && !seenCondition[ct] {
			seenCondition[ct] = true
			setCondition(out, conditionOf(ct, st))
		}
	}
	if equality.Semantic.DeepEqual(pod.ObjectMeta, out.ObjectMeta) && equality.Semantic.DeepEqual(pod.Status, out.Status) {
		return nil
	}
	return out
}

// unmarkPod removes from a copy of pod what marker m's probes may have put
// there: label and annotation keys still holding a value of one of its
// policies, and its condition types. nil when nothing changes.
func unmarkPod(pod *corev1.Pod, m *appsv1alpha1.PodProbeMarker) *corev1.Pod {
	out := pod.DeepCopy()
	types := map[corev1.PodConditionType]bool{}
	for _, pr := range m.Spec.Probes {
		for _, pol := range pr.MarkerPolicy {
			removeIfEqual(out.Labels, pol.Labels)
			removeIfEqual(out.Annotations, pol.Annotations)
		}
		if pr.PodConditionType != "" {
			types[corev1.PodConditionType(pr.PodConditionType)] = true
		}
	}
	if len(types) > 0 {
		kept := out.Status.Conditions[:0:0]
		for _, cond := range out.Status.Conditions {
			if !types[cond.Type] {
				kept = append(kept, cond)
			}
		}
		out.Status.Conditions = kept
	}
	if len(out.Labels) == 0 && len(pod.Labels) == 0 {
		out.Labels = pod.Labels
	}
	if len(out.Annotations) == 0 && len(pod.Annotations) == 0 {
		out.Annotations = pod.Annotations
	}
	if equality.Semantic.DeepEqual(pod.ObjectMeta, out.ObjectMeta) && equality.Semantic.DeepEqual(pod.Status, out.Status) {
		return nil
	}
	return out
}

func removeIfEqual(m, policy map[string]string) {
	for k, v := range policy {
		if cur, ok := m[k]; ok && cur == v {
			delete(m, k)
		}
	}
}

func findProbe(markers map[string]*appsv1alpha1.PodProbeMarker, name string) *appsv1alpha1.PodContainerProbe {
	ppm, probe, ok := splitProbeName(name)
	if !ok {
		return nil
	}
	m := markers[ppm]
	if m == nil || m.DeletionTimestamp != nil {
		return nil
	}
	for i := range m.Spec.Probes {
		if m.Spec.Probes[i].Name == probe {
			return &m.Spec.Probes[i]
		}
	}
	return nil
}

func setAll(m, kv map[string]string) map[string]string {
	if len(kv) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range kv {
		m[k] = v
	}
	return m
}

func conditionOf(conditionType string, st appsv1alpha1.ContainerProbeState) corev1.PodCondition {
	status := corev1.ConditionFalse
	if st.State == appsv1alpha1.ProbeSucceeded {
		status = corev1.ConditionTrue
	}
	return corev1.PodCondition{
		Type:               corev1.PodConditionType(conditionType),
		Status:             status,
		LastProbeTime:      st.LastProbeTime,
		LastTransitionTime: st.LastTransitionTime,
		Message:            st.Message,
	}
}

// setCondition sets cond on pod unless one of its type with the same status
// and message is there already: a newer lastProbeTime alone is no change
// worth a pod write (as in OpenKruise), so an agent refreshing its probe
// times costs no pod writes.
func setCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		cur := &pod.Status.Conditions[i]
		if cur.Type != cond.Type {
			continue
		}
		if cur.Status == cond.Status && cur.Message == cond.Message {
			return
		}
		*cur = cond
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

// matchedPods counts the active, scheduled pods m selects.
func matchedPods(m *appsv1alpha1.PodProbeMarker, pods []*corev1.Pod) int64 {
	var n int64
	for _, p := range pods {
		if p.Spec.NodeName != "" && podActive(p) && selects(m, p) {
			n++
		}
	}
	return n
}

// retiredProbes returns the probes of old whose markers new no longer
// applies: removed ones, and for a probe kept under its name, the policy
// entries and condition type it dropped or changed.
func retiredProbes(old, new *appsv1alpha1.PodProbeMarker) []appsv1alpha1.PodContainerProbe {
	kept := map[string]*appsv1alpha1.PodContainerProbe{}
	for i := range new.Spec.Probes {
		kept[new.Spec.Probes[i].Name] = &new.Spec.Probes[i]
	}
	var out []appsv1alpha1.PodContainerProbe
	for _, o := range old.Spec.Probes {
		n := kept[o.Name]
		if n == nil {
			out = append(out, o)
			continue
		}
		gone := appsv1alpha1.PodContainerProbe{Name: o.Name}
		if o.PodConditionType != n.PodConditionType {
			gone.PodConditionType = o.PodConditionType
		}
		for _, op := range o.MarkerPolicy {
			var np appsv1alpha1.ProbeMarkerPolicy
			for _, p := range n.MarkerPolicy {
				if p.State == op.State {
					np = p
				}
			}
			pol := appsv1alpha1.ProbeMarkerPolicy{State: op.State, Labels: dropped(op.Labels, np.Labels), Annotations: dropped(op.Annotations, np.Annotations)}
			if len(pol.Labels)+len(pol.Annotations) > 0 {
				gone.MarkerPolicy = append(gone.MarkerPolicy, pol)
			}
		}
		if gone.PodConditionType != "" || len(gone.MarkerPolicy) > 0 {
			out = append(out, gone)
		}
	}
	return out
}

// dropped returns the entries of old that new does not set to the same value.
func dropped(old, new map[string]string) map[string]string {
	var out map[string]string
	for k, v := range old {
		if nv, ok := new[k]; ok && nv == v {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
