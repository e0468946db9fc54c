package webhook

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// registry records what RunScopeSyncers registers.
type registry struct {
	replica     []string
	controllers []string
	factories   []kitapp.InformerFactory
}

func (r *registry) AddReplicaComponent(c kitapp.ReplicaComponent) {
	r.replica = append(r.replica, c.Name)
}
func (r *registry) AddController(c kitapp.Controller) {
	r.controllers = append(r.controllers, c.Name())
}
func (r *registry) AddReplicaInformerFactory(f kitapp.InformerFactory) {
	r.factories = append(r.factories, f)
}

// RunScopeSyncers makes each syncer widen on every replica and narrow on the leader, wakes it on a change of the
// watched objects (as onChange says) and wakes every syncer when a named configuration appears.
func TestRunScopeSyncers(t *testing.T) {
	kube := fake.NewClientset()
	objects := informers.NewSharedInformerFactory(kube, 0)
	inf := objects.Core().V1().ConfigMaps().Informer()
	ref := ConfigRef{Kind: Validating, Name: "x-webhook"}
	none := func() (Scope, error) { return Scope{}, nil }
	a, b := NewScopeSyncer(kube, ref, "a.x.io", none), NewScopeSyncer(kube, ref, "b.x.io", none)
	onChange := func(trigger func()) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(any) { trigger() }}
	}
	reg := &registry{}
	require.NoError(t, RunScopeSyncers(reg, kube, inf, onChange, []ConfigRef{ref}, a, b))
	assert.Equal(t, []string{"webhook-scope-widen-a.x.io", "webhook-scope-widen-b.x.io"}, reg.replica, "every replica widens")
	assert.Equal(t, []string{"webhook-scope-a.x.io", "webhook-scope-b.x.io"}, reg.controllers, "the leader narrows")
	require.Len(t, reg.factories, 1, "one configuration watch")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := func(what string) {
		t.Helper()
		for _, s := range []*ScopeSyncer{a, b} {
			for _, tr := range []Trigger{s.trigger, s.widen} {
				select {
				case <-tr:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s did not wake %s", what, s.Webhook)
				}
			}
		}
	}
	objects.Start(ctx.Done())
	objects.WaitForCacheSync(ctx.Done())
	_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	woken("a watched object's change")

	reg.factories[0].Start(ctx.Done())
	reg.factories[0].WaitForCacheSync(ctx.Done())
	_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "x-webhook"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	woken("the configuration's appearance")
}

// Serve hands the new server to register and refuses options that do not validate, registering nothing.
func TestServe(t *testing.T) {
	env := &kitapp.Env{KubeClient: fake.NewClientset()}
	env.Metrics = prometheus.NewRegistry()
	var got *Server
	opts := DefaultOptions("x-controller")
	opts.CertDir = t.TempDir()
	require.NoError(t, Serve(env, opts, []ConfigRef{{Kind: Mutating, Name: "cfg"}}, func(s *Server) { got = s }))
	assert.NotNil(t, got)

	got = nil
	opts.Port = -1
	assert.Error(t, Serve(env, opts, nil, func(s *Server) { got = s }))
	assert.Nil(t, got, "nothing registered")
}

// ListedScope waits for its cache, computes the scope of everything listed and reports exactly those objects once
// applied; without a report the scope has no Applied.
func TestListedScope(t *testing.T) {
	synced, objs := false, []string{"a", "b"}
	list := func(sel labels.Selector) ([]string, error) {
		assert.True(t, sel.Empty(), "everything")
		return objs, nil
	}
	scope := func(all []string) (Scope, error) {
		return Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "in", Expression: NamespaceIn(all...)}}}, nil
	}
	var reported []string
	report := func(_ context.Context, all []string) error { reported = all; return nil }

	compute := ListedScope("thing", func() bool { return synced }, list, scope, report)
	_, err := compute()
	assert.EqualError(t, err, "thing cache not synced yet")

	synced = true
	s, err := compute()
	require.NoError(t, err)
	require.Len(t, s.MatchConditions, 1)
	assert.Equal(t, NamespaceIn("a", "b"), s.MatchConditions[0].Expression)
	objs = []string{"c"} // what is listed later is not what this scope reports
	require.NotNil(t, s.Applied)
	require.NoError(t, s.Applied(context.Background()))
	assert.Equal(t, []string{"a", "b"}, reported)

	s, err = ListedScope("thing", func() bool { return true }, list, scope, nil)()
	require.NoError(t, err)
	assert.Nil(t, s.Applied)

	_, err = ListedScope("thing", func() bool { return true }, list, func([]string) (Scope, error) { return Scope{}, errors.New("bad") }, report)()
	assert.EqualError(t, err, "bad")
}
