package wiring

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

func TestNewNeedsARESTConfig(t *testing.T) {
	_, err := New(context.Background(), &kitapp.Env{Env: shell.Env{Name: "x-controller"}, KubeClient: fake.NewClientset()})
	require.ErrorContains(t, err, "x-controller needs a REST config")
}

// Both factories watch --namespace only and cache objects without their
// managedFields; the scheme knows Flotilla's kinds for events.
func TestNew(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK) // an empty watch: the reflector watches again
			return
		}
		list := appsv1alpha1.CloneSetList{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSetList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "7"},
			Items:    []appsv1alpha1.CloneSet{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", ManagedFields: managed}}},
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer api.Close()

	kube := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", ManagedFields: managed}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "team-b"}})
	env := &kitapp.Env{
		Env:        shell.Env{Name: "x-controller", Options: kitapp.Options{Namespace: "team-a"}, RESTConfig: &rest.Config{Host: api.URL}},
		KubeClient: kube,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := New(ctx, env)
	require.NoError(t, err)
	assert.Same(t, kube, c.Kube)
	assert.NotNil(t, c.Recorder)
	gvks, _, err := c.Scheme.ObjectKinds(&appsv1alpha1.CloneSet{})
	require.NoError(t, err)
	assert.Equal(t, "CloneSet", gvks[0].Kind)

	sets := c.Informers.Apps().V1alpha1().CloneSets().Informer()
	pods := c.KubeInformers.Core().V1().Pods().Informer()
	c.Informers.Start(ctx.Done())
	c.KubeInformers.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), sets.HasSynced, pods.HasSynced))

	got := sets.GetStore().List()
	require.Len(t, got, 1)
	assert.Nil(t, got[0].(*appsv1alpha1.CloneSet).ManagedFields)
	mu.Lock()
	assert.Equal(t, "/apis/apps.kruise.io/v1alpha1/namespaces/team-a/clonesets", paths[0])
	mu.Unlock()
	gotPods := pods.GetStore().List()
	require.Len(t, gotPods, 1, "team-b's pod is not watched")
	assert.Nil(t, gotPods[0].(*corev1.Pod).ManagedFields)
}
