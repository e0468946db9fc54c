package nodeclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appsv1alpha1listers "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	appsv1beta1listers "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Unit tests run without a control plane under -short; testenv skips the integration tests then.
func TestMain(m *testing.M) { testenv.Main(m) }

const timeout = 30 * time.Second

// harness is a test's namespace, two kwok nodes (the agent's and another), the clients under test and, to set
// up and check, the typed clientsets.
type harness struct {
	t          *testing.T
	env        *testenv.Env
	ns         string
	node, away string
	nc         *Clients
	flotilla   versioned.Interface
}

func newHarness(t *testing.T) *harness {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	nodes := env.KwokNodes(t, ns, 2, nil)
	nc, err := New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, env: env, ns: ns, node: nodes[0], away: nodes[1], nc: nc, flotilla: versioned.NewForConfigOrDie(env.Config)}
}

func (h *harness) pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "game"}},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers: []corev1.Container{{Name: "main", Image: "game:1"}}},
	}
}

// createPod creates a pod through the typed clientset (set-up, not under test).
func (h *harness) createPod(name, node string) *corev1.Pod {
	h.t.Helper()
	p, err := h.env.Kube.CoreV1().Pods(h.ns).Create(context.Background(), h.pod(name, node), metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func nodeSelector(node string) string {
	return fields.OneTermEqualSelector("spec.nodeName", node).String()
}
func nameSelector(name string) string {
	return fields.OneTermEqualSelector("metadata.name", name).String()
}

// run starts set until the test ends and waits for its caches.
func run(t *testing.T, set *Informers) {
	t.Helper()
	stop := make(chan struct{})
	set.Start(stop)
	t.Cleanup(func() { close(stop); set.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for typ, ok := range set.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
}

// The informers list what exists at start and watch what comes after, each seeing only what its selector
// selects, without managedFields; a deletion reaches them too.
func TestInformersListAndWatch(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	before := h.createPod("before", h.node)
	set := h.nc.Informers(0)
	podInf := set.Pods(nodeSelector(h.node))
	if again := set.Pods(nodeSelector(h.node)); again != podInf {
		t.Fatal("a second request for the same informer built another")
	}
	nppInf := set.NodePodProbes(nameSelector(h.node))
	sel := fmt.Sprintf("%s=%s,%s=true", appsv1alpha1.ContainerRecreateRequestNodeNameKey, h.node, appsv1alpha1.ContainerRecreateRequestActiveKey)
	crrInf := set.ContainerRecreateRequests(sel)
	niInf := set.NodeImages(nameSelector(h.node))
	run(t, set)

	pods := corelisters.NewPodLister(podInf.GetIndexer())
	if _, err := pods.Pods(h.ns).Get(before.Name); err != nil {
		t.Fatalf("pod listed at start: %v", err)
	}

	// Objects of the other node first: once those of the agent's node arrived, the others would have too.
	h.createPod("away", h.away)
	npps := h.flotilla.AppsV1alpha1().NodePodProbes()
	for _, n := range []string{h.away, h.node} {
		if _, err := npps.Create(ctx, &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = npps.Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	nis := h.flotilla.AppsV1beta1().NodeImages()
	for _, n := range []string{h.away, h.node} {
		if _, err := nis.Create(ctx, &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nis.Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	crrs := h.flotilla.AppsV1alpha1().ContainerRecreateRequests(h.ns)
	for name, node := range map[string]string{"away": h.away, "here": h.node} {
		crr := &appsv1alpha1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{
				appsv1alpha1.ContainerRecreateRequestNodeNameKey: node, appsv1alpha1.ContainerRecreateRequestActiveKey: "true"}},
			Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "before", Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}},
		}
		if _, err := crrs.Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := h.createPod("after", h.node)

	testenv.Eventually(t, timeout, func() (bool, error) {
		p, err := pods.Pods(h.ns).Get(after.Name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.UID == after.UID, err
	})
	nppLister := appsv1alpha1listers.NewNodePodProbeLister(nppInf.GetIndexer())
	niLister := appsv1beta1listers.NewNodeImageLister(niInf.GetIndexer())
	crrLister := appsv1alpha1listers.NewContainerRecreateRequestLister(crrInf.GetIndexer())
	testenv.Eventually(t, timeout, func() (bool, error) {
		_, err1 := nppLister.Get(h.node)
		_, err2 := niLister.Get(h.node)
		_, err3 := crrLister.ContainerRecreateRequests(h.ns).Get("here")
		return err1 == nil && err2 == nil && err3 == nil, nil
	})
	for what, keys := range map[string][]string{"pods": podInf.GetStore().ListKeys(), "NodePodProbes": nppInf.GetStore().ListKeys(),
		"NodeImages": niInf.GetStore().ListKeys(), "ContainerRecreateRequests": crrInf.GetStore().ListKeys()} {
		for _, k := range keys {
			if k == h.ns+"/away" || k == h.away {
				t.Errorf("%s: %s of the other node cached", what, k)
			}
		}
	}
	if len(podInf.GetStore().List()) != 2 {
		t.Errorf("pods cached: %v", podInf.GetStore().ListKeys())
	}
	for _, o := range append(podInf.GetStore().List(), nppInf.GetStore().List()...) {
		if m := o.(metav1.Object); len(m.GetManagedFields()) > 0 {
			t.Errorf("%s cached with managedFields", m.GetName())
		}
	}
	// The namespace index the listers' List uses.
	if byNS, err := podInf.GetIndexer().ByIndex(cache.NamespaceIndex, h.ns); err != nil || len(byNS) != 2 {
		t.Errorf("pods by namespace: %d, %v", len(byNS), err)
	}

	if err := h.env.Kube.CoreV1().Pods(h.ns).Delete(ctx, after.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() (bool, error) {
		_, err := pods.Pods(h.ns).Get(after.Name)
		return apierrors.IsNotFound(err), nil
	})
}

// UpdateStatus of a NodePodProbe, a ContainerRecreateRequest and a NodeImage writes the status (and only it),
// guarded by the resourceVersion sent.
func TestUpdateStatus(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	npps := h.flotilla.AppsV1alpha1().NodePodProbes()
	npp, err := npps.Create(ctx, &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: h.node},
		Spec: appsv1alpha1.NodePodProbeSpec{PodProbes: []appsv1alpha1.PodProbe{{Name: "p", Namespace: h.ns, UID: "u1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = npps.Delete(context.Background(), h.node, metav1.DeleteOptions{}) })
	stale := npp.DeepCopy()
	npp.Status.PodProbeStatuses = []appsv1alpha1.PodProbeStatus{{Namespace: h.ns, Name: "p", UID: "u1",
		ProbeStates: []appsv1alpha1.ContainerProbeState{{Name: "ppm#tcp", State: appsv1alpha1.ProbeSucceeded}}}}
	npp.Spec.PodProbes = nil // the status subresource ignores the spec
	written, err := h.nc.NodePodProbes().UpdateStatus(ctx, npp, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.ResourceVersion == stale.ResourceVersion || len(written.Status.PodProbeStatuses) != 1 {
		t.Fatalf("written: %+v", written)
	}
	got, err := npps.Get(ctx, h.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.PodProbes) != 1 || len(got.Status.PodProbeStatuses) != 1 || got.Status.PodProbeStatuses[0].ProbeStates[0].State != appsv1alpha1.ProbeSucceeded {
		t.Fatalf("read back: spec %+v status %+v", got.Spec, got.Status)
	}
	if _, err := h.nc.NodePodProbes().UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update of a stale NodePodProbe: %v, want Conflict", err)
	}
	missing := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: h.away}}
	if _, err := h.nc.NodePodProbes().UpdateStatus(ctx, missing, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing NodePodProbe: %v, want NotFound", err)
	}

	crrs := h.flotilla.AppsV1alpha1().ContainerRecreateRequests(h.ns)
	crr, err := crrs.Create(ctx, &appsv1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: h.ns},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
	crr.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestRecreating}}
	if _, err := h.nc.ContainerRecreateRequests(h.ns).UpdateStatus(ctx, crr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gotCRR, err := crrs.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotCRR.Status.Phase != appsv1alpha1.ContainerRecreateRequestRecreating || len(gotCRR.Status.ContainerRecreateStates) != 1 {
		t.Fatalf("CRR status read back: %+v", gotCRR.Status)
	}
	if _, err := h.nc.ContainerRecreateRequests(h.ns).UpdateStatus(ctx, crr, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update of a stale ContainerRecreateRequest: %v, want Conflict", err)
	}

	nis := h.flotilla.AppsV1beta1().NodeImages()
	ni, err := nis.Create(ctx, &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: h.node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nis.Delete(context.Background(), h.node, metav1.DeleteOptions{}) })
	ni.Status.Desired, ni.Status.Succeeded = 1, 1
	if _, err := h.nc.NodeImages().UpdateStatus(ctx, ni, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gotNI, err := nis.Get(ctx, h.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotNI.Status.Desired != 1 || gotNI.Status.Succeeded != 1 {
		t.Fatalf("NodeImage status read back: %+v", gotNI.Status)
	}
}

// Pods: create, a strategic merge patch (and NotFound for a missing pod), a delete refused for another UID and
// carried out for the pod's own.
func TestPods(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pods := h.nc.Pods()
	created, err := pods.Create(ctx, h.pod("p", h.node), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.Namespace != h.ns {
		t.Fatalf("created: %+v", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, h.pod("p", h.node), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}

	patched, err := pods.Patch(ctx, h.ns, "p", types.StrategicMergePatchType,
		[]byte(`{"metadata":{"annotations":{"flotilla.dev/tested":"yes"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if patched.Annotations["flotilla.dev/tested"] != "yes" || patched.Labels["app"] != "game" {
		t.Fatalf("patched metadata: %+v", patched.ObjectMeta)
	}
	if _, err := pods.Patch(ctx, h.ns, "p", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status"); err != nil {
		t.Fatalf("dry-run status patch: %v", err)
	}
	if _, err := pods.Patch(ctx, h.ns, "missing", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing pod: %v, want NotFound", err)
	}

	other := types.UID("00000000-0000-0000-0000-000000000000")
	zero := int64(0)
	err = pods.Delete(ctx, h.ns, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}, GracePeriodSeconds: &zero})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with another pod's UID: %v, want Conflict", err)
	}
	if err := pods.Delete(ctx, h.ns, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}, GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() (bool, error) {
		_, err := h.env.Kube.CoreV1().Pods(h.ns).Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err := pods.Delete(ctx, h.ns, "p", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete of a deleted pod: %v, want NotFound", err)
	}
}

// A Secret is read; a missing one is NotFound.
func TestSecrets(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.env.Kube.CoreV1().Secrets(h.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: h.ns},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := h.nc.Secrets(h.ns).Get(ctx, "pull", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["k"]) != "v" || s.Type != corev1.SecretTypeOpaque {
		t.Fatalf("secret read: %+v", s)
	}
	if _, err := h.nc.Secrets(h.ns).Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing secret: %v, want NotFound", err)
	}
}

// Events recorded through a broadcaster writing to the EventSink appear, a repeated one as one event whose
// count grows (the sink's Patch); Update replaces an event.
func TestEventSink(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pod := h.createPod("p", h.node)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(h.nc.EventSink())
	t.Cleanup(broadcaster.Shutdown)
	recorder := broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: "nodeclient-test"})

	find := func(reason string) (*corev1.Event, error) {
		list, err := h.env.Kube.CoreV1().Events(h.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			ev := &list.Items[i]
			if ev.Reason == reason && ev.InvolvedObject.UID == pod.UID && ev.Source.Component == "nodeclient-test" {
				return ev, nil
			}
		}
		return nil, nil
	}
	recorder.Eventf(pod, corev1.EventTypeNormal, "Tested", "container %s probed", "main")
	testenv.Eventually(t, timeout, func() (bool, error) {
		ev, err := find("Tested")
		return ev != nil && ev.Message == "container main probed" && ev.InvolvedObject.Kind == "Pod", err
	})
	recorder.Eventf(pod, corev1.EventTypeNormal, "Tested", "container %s probed", "main")
	testenv.Eventually(t, timeout, func() (bool, error) {
		ev, err := find("Tested")
		return ev != nil && ev.Count >= 2, err
	})

	ev, err := find("Tested")
	if err != nil || ev == nil {
		t.Fatalf("event: %v %v", ev, err)
	}
	ev.Message = "updated"
	updated, err := h.nc.EventSink().Update(ev)
	if err != nil {
		t.Fatal(err)
	}
	if updated.Message != "updated" || updated.ResourceVersion == ev.ResourceVersion {
		t.Fatalf("updated event: %+v", updated)
	}
	if _, err := h.nc.EventSink().Patch(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "missing"}}, []byte(`{}`)); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing event: %v, want NotFound", err)
	}
}
