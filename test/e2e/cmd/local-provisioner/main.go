// Command local-provisioner is the dynamic PersistentVolume provisioner of the local control
// plane (hack/cluster). For every PersistentVolumeClaim of a StorageClass whose provisioner is
// --provisioner-name it creates a hostPath PersistentVolume backed by a fresh directory under
// --volume-dir, pre-bound to the claim (claimRef), so kube-controller-manager's PV controller
// binds the pair and kube-scheduler can place pods that use the claim on any kwok node. When
// such a PV is Released and its reclaim policy is Delete, the directory and the PV are removed.
//
// With volumeBindingMode WaitForFirstConsumer it waits for the scheduler's
// volume.kubernetes.io/selected-node annotation and pins the PV to that node.
//
// It is deliberately small (client-go informers + one work queue), with no leader election:
// exactly one instance runs per local cluster, started by hack/cluster/up.sh with the identity
// CN=flotilla:local-provisioner (RBAC in hack/cluster/manifests/bootstrap.yaml).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

const (
	annProvisionedBy     = "pv.kubernetes.io/provisioned-by"
	annSelectedNode      = "volume.kubernetes.io/selected-node"
	annBetaStorageClass  = "volume.beta.kubernetes.io/storage-class"
	defaultCapacity      = "1Gi"
	pvcKeyPrefix         = "pvc/"
	pvKeyPrefix          = "pv/"
	hostnameLabel        = "kubernetes.io/hostname"
	resyncPeriod         = 0
	workers              = 4
	eventComponent       = "flotilla-local-provisioner"
	reasonProvisioned    = "ProvisioningSucceeded"
	reasonProvisionError = "ProvisioningFailed"
)

type provisioner struct {
	name    string
	root    string
	kube    kubernetes.Interface
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	queue   workqueue.TypedRateLimitingInterface[string]
	events  record.EventRecorder
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the provisioner identity")
	root := flag.String("volume-dir", "", "directory under which volume directories are created")
	name := flag.String("provisioner-name", "flotilla.dev/local-hostpath", "StorageClass.provisioner served by this process")
	flag.Parse()
	if *kubeconfig == "" || *root == "" {
		log.Fatal("--kubeconfig and --volume-dir are required")
	}
	absRoot, err := filepath.Abs(*root)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(absRoot, 0o755); err != nil {
		log.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.UserAgent = eventComponent
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	factory := informers.NewSharedInformerFactory(kube, resyncPeriod)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	p := &provisioner{
		name:    *name,
		root:    absRoot,
		kube:    kube,
		pvcs:    factory.Core().V1().PersistentVolumeClaims().Lister(),
		pvs:     factory.Core().V1().PersistentVolumes().Lister(),
		classes: factory.Storage().V1().StorageClasses().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local-provisioner"}),
		events: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent}),
	}
	enqueuePVC := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(pvcKeyPrefix + key)
		}
	}
	enqueuePV := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(pvKeyPrefix + key)
		}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{factory.Core().V1().PersistentVolumeClaims().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: enqueuePVC, UpdateFunc: func(_, n any) { enqueuePVC(n) }}},
		{factory.Core().V1().PersistentVolumes().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: enqueuePV, UpdateFunc: func(_, n any) { enqueuePV(n) }}},
		// A class created after its claims: look at every pending claim again.
		{factory.Storage().V1().StorageClasses().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { p.enqueuePendingClaims() }, UpdateFunc: func(_, _ any) { p.enqueuePendingClaims() }}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			log.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			log.Fatalf("cache of %v did not sync", typ)
		}
	}
	log.Printf("local-provisioner %q serving, volumes under %s", p.name, p.root)

	for range workers {
		go func() {
			for p.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	p.queue.ShutDown()
	factory.Shutdown()
	log.Print("local-provisioner stopped")
}

func (p *provisioner) enqueuePendingClaims() {
	claims, err := p.pvcs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if c.Spec.VolumeName == "" {
			p.queue.Add(pvcKeyPrefix + c.Namespace + "/" + c.Name)
		}
	}
}

func (p *provisioner) processNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	var err error
	switch {
	case strings.HasPrefix(key, pvcKeyPrefix):
		err = p.syncClaim(ctx, strings.TrimPrefix(key, pvcKeyPrefix))
	case strings.HasPrefix(key, pvKeyPrefix):
		err = p.syncVolume(ctx, strings.TrimPrefix(key, pvKeyPrefix))
	}
	if err != nil {
		log.Printf("%s: %v (will retry)", key, err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// classOf returns the StorageClass name of a claim (spec field or the legacy beta annotation).
func classOf(c *corev1.PersistentVolumeClaim) string {
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return c.Annotations[annBetaStorageClass]
}

func pvNameFor(c *corev1.PersistentVolumeClaim) string { return "pvc-" + string(c.UID) }

func (p *provisioner) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := p.pvcs.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || claim.Spec.DataSource != nil {
		return nil
	}
	className := classOf(claim)
	if className == "" {
		return nil
	}
	class, err := p.classes.Get(className)
	if apierrors.IsNotFound(err) {
		return nil // re-queued when the class appears
	} else if err != nil {
		return err
	}
	if class.Provisioner != p.name {
		return nil
	}
	node := ""
	if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		if node = claim.Annotations[annSelectedNode]; node == "" {
			return nil // the scheduler has not picked a node yet
		}
	}
	pvName := pvNameFor(claim)
	if _, err := p.pvs.Get(pvName); err == nil {
		return nil // already provisioned; the PV controller binds it
	}

	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok || size.IsZero() {
		size = resource.MustParse(defaultCapacity)
	}
	modes := claim.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dir := filepath.Join(p.root, pvName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		p.events.Eventf(claim, corev1.EventTypeWarning, reasonProvisionError, "creating %s: %v", dir, err)
		return err
	}
	hostPathType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{annProvisionedBy: p.name},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPathType},
			},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	}
	_, err = p.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		p.events.Eventf(claim, corev1.EventTypeWarning, reasonProvisionError, "creating PersistentVolume %s: %v", pvName, err)
		return err
	}
	log.Printf("provisioned %s for %s/%s (%s, %s)", pvName, claim.Namespace, claim.Name, size.String(), dir)
	p.events.Eventf(claim, corev1.EventTypeNormal, reasonProvisioned, "Successfully provisioned volume %s", pvName)
	return nil
}

func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != p.name ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Status.Phase != corev1.VolumeReleased {
		return nil
	}
	if hp := pv.Spec.HostPath; hp != nil {
		rel, err := filepath.Rel(p.root, hp.Path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.Contains(rel, string(filepath.Separator)) {
			return fmt.Errorf("refusing to delete %s: not a volume directory under %s", hp.Path, p.root)
		}
		if err := os.RemoveAll(hp.Path); err != nil {
			return err
		}
	}
	uid := pv.UID
	err = p.kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || errors.Is(err, context.Canceled) {
		return nil // deleted by an earlier sync of the same volume (the lister lags behind)
	} else if err != nil {
		return err
	}
	log.Printf("deleted released volume %s", name)
	return nil
}
