package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Scenario 3: N pods, the image changes, maxUnavailable 20%: time until every
// pod runs the new image and is Ready, for a CloneSet updating in place, a
// CloneSet recreating pods, and a Deployment rolling update (maxSurge 0).
func TestInPlaceRollout(t *testing.T) {
	b := newBench(t)
	n := b.s.inPlacePods
	ctx := context.Background()
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, imageV2))
	labels := map[string]string{"bench": "rollout"}

	rollout := func(subject string, match func(string, string) bool, setup func(ns string), update func(ns string)) row {
		ns := b.env.Namespace(t)
		w := watchPods(t, b.env, ns, "bench=rollout")
		setup(ns)
		w.waitReady(t, n, imageV1, b.s.waitBudget)
		from := b.audit.mark()
		start := time.Now()
		update(ns)
		done := w.waitReady(t, n, imageV2, b.s.waitBudget)
		reqs, writes := b.audit.count(from, match)
		b.cleanup(ns)
		return row{scenario: "in-place rollout", subject: subject, wall: done.Sub(start), requests: reqs, writes: writes}
	}
	cloneSet := func(strategy appsv1alpha1.CloneSetUpdateStrategyType) (func(string), func(string)) {
		setup := func(ns string) {
			b.startCloneSetController(ns)
			_, err := b.client.AppsV1alpha1().CloneSets(ns).Create(ctx, newCloneSet("rollout", n, labels, strategy), metav1.CreateOptions{})
			mustNoErr(t, err, "create CloneSet")
			testenv.Eventually(t, b.s.waitBudget, func() (bool, error) {
				cs, err := b.client.AppsV1alpha1().CloneSets(ns).Get(ctx, "rollout", metav1.GetOptions{})
				return err == nil && int(cs.Status.AvailableReplicas) == n, err
			})
		}
		update := func(ns string) {
			_, err := b.client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "rollout", types.MergePatchType, patch, metav1.PatchOptions{})
			mustNoErr(t, err, "patch CloneSet")
		}
		return setup, update
	}
	ipSetup, ipUpdate := cloneSet(appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	inPlace := rollout("CloneSet InPlaceIfPossible", isCloneSet, ipSetup, ipUpdate)
	rcSetup, rcUpdate := cloneSet(appsv1alpha1.RecreateCloneSetUpdateStrategyType)
	recreate := rollout("CloneSet ReCreate", isCloneSet, rcSetup, rcUpdate)
	deploy := rollout("Deployment RollingUpdate", isKCM, func(ns string) {
		_, err := b.env.Kube.AppsV1().Deployments(ns).Create(ctx, newDeployment("rollout", n, labels), metav1.CreateOptions{})
		mustNoErr(t, err, "create Deployment")
		testenv.Eventually(t, b.s.waitBudget, func() (bool, error) {
			d, err := b.env.Kube.AppsV1().Deployments(ns).Get(ctx, "rollout", metav1.GetOptions{})
			return err == nil && int(d.Status.AvailableReplicas) == n, err
		})
	}, func(ns string) {
		_, err := b.env.Kube.AppsV1().Deployments(ns).Patch(ctx, "rollout", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		mustNoErr(t, err, "patch Deployment")
	})
	inPlace.ratio = fmt.Sprintf("%.2f× Deployment", ratio(inPlace.wall, deploy.wall))
	recreate.ratio = fmt.Sprintf("%.2f× Deployment", ratio(recreate.wall, deploy.wall))
	deploy.ratio = "baseline"
	for _, r := range []row{inPlace, recreate, deploy} {
		record(r)
		t.Logf("%s: %.2f s, %s", r.subject, r.wall.Seconds(), formatRequests(r.requests))
	}
}
