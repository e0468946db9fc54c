package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/predownload"
)

// preDownload asks nodes still running old pods to pull the new images
// before the rolling update reaches them (gate
// PreDownloadImageForDaemonSetUpdate, OpenKruise v1.3): one ImagePullJob per
// new image (kit/predownload.DecideDaemonSet), pods selected by the
// DaemonSet's selector and controller-revision-hash NotIn the update hash,
// parallelism from apps.kruise.io/image-predownload-parallelism (default 1),
// the template's imagePullSecrets; deleted once every pod is updated.
// Flotilla ships no node agent yet: the jobs are what OpenKruise writes, for
// an agent (or kruise-daemon) to carry out. Failures only cost the
// optimisation: they are logged, the rollout goes on.
func (c *Controller) preDownload(ctx context.Context, st *syncState) {
	if c.Jobs == nil || rollingUpdate(st.ds) == nil {
		return
	}
	ds := st.ds
	desired := int(ds.Status.DesiredNumberScheduled)
	maxUnavailable := intstr.FromInt32(1)
	if mu := rollingUpdate(ds).MaxUnavailable; mu != nil {
		maxUnavailable = *mu
	}
	var old []*appsv1.ControllerRevision
	for _, r := range st.History {
		if r.Name != st.Update.Name {
			old = append(old, r)
		}
	}
	d := predownload.DecideDaemonSet(predownload.DaemonSetInput{
		Old: old, Update: st.Update, StatusHash: ds.Status.DaemonSetHash,
		Desired: desired, Updated: int(ds.Status.UpdatedNumberScheduled),
		Partition:      partition(ds, desired),
		MaxUnavailable: scaled(&maxUnavailable, desired, true),
	})
	w := predownload.Workload{Owner: ds, Kind: kindDaemonSet, Selector: ds.Spec.Selector, Template: &ds.Spec.Template}
	if out, err := c.Jobs.Act(ctx, w, st.Update, d); err != nil {
		klog.FromContext(ctx).Error(err, "Image pre-download")
	} else if out != nil {
		c.RV.Expect(out)
	}
}
