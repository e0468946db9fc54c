package lab

import (
	"context"
	"fmt"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/featuregate"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// PreDownloadGates turns on both gates image pre-download needs in set:
// KruiseDaemon=false forces PreDownloadImageForInPlaceUpdate off
// (kit/features), whatever the defaults are.
func PreDownloadGates(set map[featuregate.Feature]bool) {
	set[features.KruiseDaemon] = true
	set[features.PreDownloadImageForInPlaceUpdate] = true
}

// ImagePullJobs returns the namespace's live ImagePullJobs.
func (l *Lab) ImagePullJobs() []appsv1alpha1.ImagePullJob {
	l.T.Helper()
	list, err := l.Client.AppsV1alpha1().ImagePullJobs(l.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(l.T, err)
	return testenv.Live(list.Items)
}

// WaitImagePullJobs polls until cond holds for the namespace's live
// ImagePullJobs, and returns them.
func (l *Lab) WaitImagePullJobs(what string, cond func([]appsv1alpha1.ImagePullJob) bool) []appsv1alpha1.ImagePullJob {
	l.T.Helper()
	var jobs []appsv1alpha1.ImagePullJob
	testenv.Eventually(l.T, l.Timeout, func() (bool, error) {
		jobs = l.ImagePullJobs()
		if cond(jobs) {
			return true, nil
		}
		return false, fmt.Errorf("ImagePullJobs: %s (last: %d)", what, len(jobs))
	})
	return jobs
}
