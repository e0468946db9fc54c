package wiring

import (
	"context"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

// ReplicaInformers builds a new Flotilla factory on each call, over the
// Flotilla clientset, like Informers: limited to --namespace (all
// namespaces without it), managedFields stripped; but never resyncing,
// whatever --sync-period says (the leader's factory, built with it, is
// the clock that shows the replica one had the time to resync and did
// not).
func TestReplicaInformers(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	cases := []struct {
		namespace string
		want      []string
	}{
		{namespace: "team-a", want: []string{"team-a/web"}},
		{namespace: "", want: []string{"team-a/web", "team-b/api"}},
	}
	for _, c := range cases {
		t.Run("namespace="+c.namespace, func(t *testing.T) {
			client := flotillafake.NewClientset(
				&appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", ManagedFields: managed}},
				&appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "team-b", ManagedFields: managed}})
			raw, err := client.AppsV1alpha1().CloneSets("team-a").Get(context.Background(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, raw.ManagedFields, "precondition: the API returns managedFields")
			env := &kitapp.Env{Env: shell.Env{Name: "x-controller", Options: kitapp.Options{Namespace: c.namespace, SyncPeriod: time.Second}}}
			// The leader's factory as New builds it (resync: --sync-period).
			cl := &Clients{Client: client,
				Informers: flotillainformers.NewSharedInformerFactoryWithOptions(client, env.Options.SyncPeriod, informerOptions(env)...)}

			f := cl.ReplicaInformers(env)
			require.NotNil(t, f)
			assert.NotSame(t, cl.Informers, f, "a factory of its own, not the leader's")
			assert.NotSame(t, f, cl.ReplicaInformers(env), "a new factory per call")

			var replicaUpdates, leaderUpdates atomic.Int32
			replica := f.Apps().V1alpha1().CloneSets().Informer()
			leader := cl.Informers.Apps().V1alpha1().CloneSets().Informer()
			_, err = replica.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { replicaUpdates.Add(1) }})
			require.NoError(t, err)
			_, err = leader.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { leaderUpdates.Add(1) }})
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); f.Shutdown(); cl.Informers.Shutdown() }()
			f.Start(ctx.Done())
			cl.Informers.Start(ctx.Done())
			require.True(t, cache.WaitForCacheSync(ctx.Done(), replica.HasSynced, leader.HasSynced))

			var keys []string
			for _, o := range replica.GetStore().List() {
				cs := o.(*appsv1alpha1.CloneSet)
				assert.Nil(t, cs.ManagedFields, "managedFields stripped from %s", cs.Name)
				keys = append(keys, cs.Namespace+"/"+cs.Name)
			}
			sort.Strings(keys)
			assert.Equal(t, c.want, keys)

			require.Eventually(t, func() bool { return leaderUpdates.Load() >= int32(2*len(c.want)) }, 15*time.Second, 10*time.Millisecond,
				"the leader's factory resyncs every --sync-period (twice)")
			assert.Zero(t, replicaUpdates.Load(), "the replica factory never resyncs")
		})
	}
}
