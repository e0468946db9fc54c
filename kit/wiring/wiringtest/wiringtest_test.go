package wiringtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Objects go to the clientset of their kind, Cache reaches the informer a reconciler requested, and Writes lists
// the writes of both clientsets, without reads, until Clear.
func TestFakes(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	f := New(t, now, pod, cs)
	_, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, err, "the pod is in Kube")
	_, err = f.Client.AppsV1alpha1().CloneSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err, "the CloneSet is in Client")
	assert.Equal(t, now, f.Deps().Clock.Now())

	// As a reconciler's New would: request the informers first.
	pods := f.Deps().KubeInformers.Core().V1().Pods().Lister()
	sets := f.Deps().Informers.Apps().V1alpha1().CloneSets().Lister()
	f.Cache(pod, cs)
	cached, err := pods.List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, cached, 1)
	_, err = sets.CloneSets("ns").Get("web")
	require.NoError(t, err)
	f.Uncache(cs)
	_, err = sets.CloneSets("ns").Get("web")
	assert.Error(t, err, "uncached")

	f.Clear()
	_, _ = f.Kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, f.Kube.CoreV1().Pods("ns").Delete(context.Background(), "p", metav1.DeleteOptions{}))
	_, err = f.Client.AppsV1alpha1().CloneSets("ns").UpdateStatus(context.Background(), cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"delete pods p", "update clonesets/status web"}, f.Writes())
	assert.Equal(t, "web", OnlyUpdate[*appsv1alpha1.CloneSet](f, "clonesets", "status").Name, "the one status update")
	f.Clear()
	assert.Empty(t, f.Writes())
}

// With BumpResourceVersions every update, of either clientset, stores a new resourceVersion, as the API server
// would; without it the fake tracker keeps the one it is sent.
func TestBumpResourceVersions(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"}}
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"}}

	f := New(t, now, pod.DeepCopy(), cs.DeepCopy())
	got, err := f.Kube.CoreV1().Pods("ns").Update(ctx, pod.DeepCopy(), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", got.ResourceVersion, "the fake alone keeps the resourceVersion sent")

	f = New(t, now, pod.DeepCopy(), cs.DeepCopy())
	f.BumpResourceVersions()
	got, err = f.Kube.CoreV1().Pods("ns").Update(ctx, pod.DeepCopy(), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1001", got.ResourceVersion)
	gotCS, err := f.Client.AppsV1alpha1().CloneSets("ns").UpdateStatus(ctx, cs.DeepCopy(), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1002", gotCS.ResourceVersion, "one counter over both clientsets, subresources too")
	stored, err := f.Client.AppsV1alpha1().CloneSets("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1002", stored.ResourceVersion, "stored as bumped")
}

// Events drains the recorder: each event once, oldest first.
func TestEvents(t *testing.T) {
	f := New(t, now)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	f.Recorder.Event(pod, corev1.EventTypeNormal, "First", "one")
	f.Recorder.Eventf(pod, corev1.EventTypeWarning, "Second", "two %d", 2)
	assert.Equal(t, []string{"Normal First one", "Warning Second two 2"}, f.Events())
	assert.Empty(t, f.Events(), "drained")
}
