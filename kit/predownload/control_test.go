package predownload

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// fakeJobs records the job calls; createErr, if set, fails creates of that
// job name.
type fakeJobs struct {
	created   []*appsv1alpha1.ImagePullJob
	deleted   []string
	deleteUID []types.UID // the UID precondition of each delete
	deleteErr map[string]error
	createErr map[string]error
}

func (f *fakeJobs) Create(_ context.Context, job *appsv1alpha1.ImagePullJob, _ metav1.CreateOptions) (*appsv1alpha1.ImagePullJob, error) {
	if err := f.createErr[job.Name]; err != nil {
		return nil, err
	}
	f.created = append(f.created, job)
	return job, nil
}

func (f *fakeJobs) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	var uid types.UID
	if opts.Preconditions != nil && opts.Preconditions.UID != nil {
		uid = *opts.Preconditions.UID
	}
	f.deleteUID = append(f.deleteUID, uid)
	if err := f.deleteErr[name]; err != nil {
		return err
	}
	f.deleted = append(f.deleted, name)
	return nil
}

type fixture struct {
	jobs    *fakeJobs
	kube    *fake.Clientset
	control *Control
	events  *record.FakeRecorder
	w       Workload
}

func newFixture(t *testing.T, revs []*appsv1.ControllerRevision, cached ...*appsv1alpha1.ImagePullJob) *fixture {
	t.Helper()
	f := &fixture{jobs: &fakeJobs{}, events: record.NewFakeRecorder(10)}
	f.kube = fake.NewClientset()
	for _, r := range revs {
		require.NoError(t, f.kube.Tracker().Add(r))
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID})
	for _, j := range cached {
		require.NoError(t, idx.Add(j))
	}
	f.control = &Control{Kube: f.kube, Jobs: func(string) JobClient { return f.jobs }, Cache: idx, Recorder: f.events}
	owner := testOwner(nil)
	f.w = Workload{Owner: owner, Kind: cloneSetKind, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: &corev1.PodTemplateSpec{}}
	return f
}

func (f *fixture) revisionLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	r, err := f.kube.AppsV1().ControllerRevisions("ns").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return r.Labels
}

func TestControlCreatesJobsAndLabelsRevision(t *testing.T) {
	v1 := rev(t, "web-aaa", []string{"app:v1", "side:v1"})
	v2 := rev(t, "web-bbb", []string{"app:v2", "side:v2"})
	f := newFixture(t, []*appsv1.ControllerRevision{v1, v2})
	in := Input{Current: v1, Update: v2, Replicas: 5, MaxUnavailable: intstr.FromInt32(1), StatusUpdateRevision: "web-bbb"}

	out, err := f.control.Sync(context.Background(), f.w, in)
	require.NoError(t, err)
	require.NotNil(t, out)
	assert.Equal(t, "true", out.Labels[pub.ImagePreDownloadCreatedKey])
	require.Len(t, f.jobs.created, 2)
	assert.Equal(t, "web-bbb-c0", f.jobs.created[0].Name)
	assert.Equal(t, "web-bbb-c1", f.jobs.created[1].Name)
	assert.Equal(t, "true", f.revisionLabels(t, "web-bbb")[pub.ImagePreDownloadCreatedKey])
	assert.Len(t, f.events.Events, 2)
}

// A failed create leaves the revision unlabelled so the next sync retries
// (a deliberate difference from OpenKruise); an existing job is no failure.
func TestControlRetriesFailedCreate(t *testing.T) {
	v1 := rev(t, "web-aaa", []string{"app:v1", "side:v1"})
	v2 := rev(t, "web-bbb", []string{"app:v2", "side:v2"})
	f := newFixture(t, []*appsv1.ControllerRevision{v1, v2})
	in := Input{Current: v1, Update: v2, Replicas: 5, MaxUnavailable: intstr.FromInt32(1), StatusUpdateRevision: "web-bbb"}
	f.jobs.createErr = map[string]error{"web-bbb-c1": errors.New("boom")}

	out, err := f.control.Sync(context.Background(), f.w, in)
	require.Error(t, err)
	assert.Nil(t, out)
	assert.Empty(t, f.revisionLabels(t, "web-bbb")[pub.ImagePreDownloadCreatedKey])
	assert.Contains(t, <-f.events.Events, "CreatedImagePullJob")
	assert.Contains(t, <-f.events.Events, "Warning FailedCreateImagePullJob")

	f.jobs.createErr = map[string]error{"web-bbb-c0": apierrors.NewAlreadyExists(appsv1alpha1.Resource("imagepulljobs"), "web-bbb-c0")}
	out, err = f.control.Sync(context.Background(), f.w, in)
	require.NoError(t, err)
	require.NotNil(t, out)
	assert.Equal(t, "true", f.revisionLabels(t, "web-bbb")[pub.ImagePreDownloadCreatedKey])
}

func TestControlIgnoreLabelsRevision(t *testing.T) {
	v1 := rev(t, "web-aaa", []string{"app:v1"})
	v2 := rev(t, "web-bbb", []string{"app:v2"})
	f := newFixture(t, []*appsv1.ControllerRevision{v1, v2})
	out, err := f.control.Sync(context.Background(), f.w, Input{Current: v1, Update: v2, Replicas: 5, Recreate: true})
	require.NoError(t, err)
	require.NotNil(t, out)
	assert.Equal(t, "true", f.revisionLabels(t, "web-bbb")[pub.ImagePreDownloadIgnoredKey])
	assert.Empty(t, f.jobs.created)
}

func TestControlDeletesOwnJobsOnceConverged(t *testing.T) {
	v1 := rev(t, "web-aaa", []string{"app:v1"})
	owner := testOwner(nil)
	own := &appsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "web-aaa-c0", Namespace: "ns", UID: "job-uid",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, cloneSetKind)}}}
	notController := own.DeepCopy()
	notController.Name = "shared"
	notController.OwnerReferences[0].Controller = nil
	gone := own.DeepCopy()
	gone.Name = "gone"
	gone.DeletionTimestamp = &metav1.Time{}
	f := newFixture(t, []*appsv1.ControllerRevision{v1}, own, notController, gone)

	out, err := f.control.Sync(context.Background(), f.w, Input{Current: v1, Update: v1, Replicas: 5})
	require.NoError(t, err)
	assert.Nil(t, out)
	assert.Equal(t, []string{"web-aaa-c0"}, f.jobs.deleted)
	assert.Equal(t, []types.UID{"job-uid"}, f.jobs.deleteUID, "deleted only if it is still the cached job")
}

// A job replaced since the cache saw it (the UID precondition fails: 409) or already gone is left alone without
// an error; any other failure is the sync's error.
func TestControlDeleteJobsPreconditionFailed(t *testing.T) {
	owner := testOwner(nil)
	job := func(name string) *appsv1alpha1.ImagePullJob {
		return &appsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, cloneSetKind)}}}
	}
	f := newFixture(t, nil, job("replaced"), job("gone"), job("kept"))
	gr := appsv1alpha1.SchemeGroupVersion.WithResource("imagepulljobs").GroupResource()
	f.jobs.deleteErr = map[string]error{
		"replaced": apierrors.NewConflict(gr, "replaced", errors.New("Precondition failed: UID in precondition")),
		"gone":     apierrors.NewNotFound(gr, "gone"),
	}
	require.NoError(t, f.control.DeleteJobs(context.Background(), owner))
	assert.Equal(t, []string{"kept"}, f.jobs.deleted)
	assert.ElementsMatch(t, []types.UID{"replaced-uid", "gone-uid", "kept-uid"}, f.jobs.deleteUID)

	f.jobs.deleteErr["kept"] = apierrors.NewForbidden(gr, "kept", errors.New("no"))
	assert.ErrorContains(t, f.control.DeleteJobs(context.Background(), owner), "delete ImagePullJob kept")
}
