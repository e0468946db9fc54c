package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// ConfigKind is the kind of a webhook configuration.
type ConfigKind string

const (
	Mutating   ConfigKind = "MutatingWebhookConfiguration"
	Validating ConfigKind = "ValidatingWebhookConfiguration"
)

// ConfigRef names one of the binary's own webhook configurations. The
// binary edits only these (RBAC grants get/update by resourceNames).
type ConfigRef struct {
	Kind ConfigKind
	Name string
}

func (r ConfigRef) String() string { return string(r.Kind) + "/" + r.Name }

// Webhook is the part of a mutating or validating webhook entry Flotilla
// edits: both kinds have these fields, pointed to here so that one edit
// function serves both.
type Webhook struct {
	Name              string
	ClientConfig      *admissionregistrationv1.WebhookClientConfig
	MatchConditions   *[]admissionregistrationv1.MatchCondition
	NamespaceSelector **metav1.LabelSelector
	ObjectSelector    **metav1.LabelSelector
}

// EditFunc edits one webhook entry in place.
type EditFunc func(w Webhook)

// Configurations edits webhook configurations with get + update, retried
// on conflicts, writing only when the edit changed something.
type Configurations struct {
	Client kubernetes.Interface
}

// Edit applies edit to every webhook entry of ref and updates the object if
// anything changed; it reports whether it wrote.
func (c Configurations) Edit(ctx context.Context, ref ConfigRef, edit EditFunc) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var err error
		switch ref.Kind {
		case Mutating:
			api := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
			wrote, err = getEditUpdate(ctx, ref.Name, api.Get, api.Update, func(upd *admissionregistrationv1.MutatingWebhookConfiguration) {
				for i := range upd.Webhooks {
					w := &upd.Webhooks[i]
					edit(Webhook{Name: w.Name, ClientConfig: &w.ClientConfig, MatchConditions: &w.MatchConditions,
						NamespaceSelector: &w.NamespaceSelector, ObjectSelector: &w.ObjectSelector})
				}
			})
		case Validating:
			api := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			wrote, err = getEditUpdate(ctx, ref.Name, api.Get, api.Update, func(upd *admissionregistrationv1.ValidatingWebhookConfiguration) {
				for i := range upd.Webhooks {
					w := &upd.Webhooks[i]
					edit(Webhook{Name: w.Name, ClientConfig: &w.ClientConfig, MatchConditions: &w.MatchConditions,
						NamespaceSelector: &w.NamespaceSelector, ObjectSelector: &w.ObjectSelector})
				}
			})
		default:
			return fmt.Errorf("unknown webhook configuration kind %q", ref.Kind)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("edit %s: %w", ref, err)
	}
	return wrote, nil
}

// getEditUpdate reads an object, edits a copy and updates it when the edit
// changed anything; it reports whether it wrote.
func getEditUpdate[T any, PT interface {
	*T
	DeepCopyObject() runtime.Object
}](ctx context.Context, name string,
	get func(context.Context, string, metav1.GetOptions) (PT, error),
	update func(context.Context, PT, metav1.UpdateOptions) (PT, error),
	edit func(PT),
) (bool, error) {
	cur, err := get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	upd := cur.DeepCopyObject().(PT)
	edit(upd)
	if reflect.DeepEqual(cur, upd) {
		return false, nil
	}
	if _, err := update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

// SetCABundle is the edit writing bundle into every entry's clientConfig.
func SetCABundle(bundle []byte) EditFunc {
	return func(w Webhook) {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			w.ClientConfig.CABundle = slices.Clone(bundle)
		}
	}
}

// Trigger is a coalescing wake-up: many Triggers before the loop runs
// make one run.
type Trigger chan struct{}

// NewTrigger returns a Trigger.
func NewTrigger() Trigger { return make(Trigger, 1) }

// Fire wakes the loop (never blocks).
func (t Trigger) Fire() {
	select {
	case t <- struct{}{}:
	default:
	}
}

// runLoop calls sync at start, on each trigger and every resync, until ctx
// is done; a failed sync is retried with back-off (1s doubling to 1m).
func runLoop(ctx context.Context, t Trigger, resync time.Duration, what string, sync func(context.Context) error) {
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30}
	var retryAfter <-chan time.Time
	tick := time.NewTicker(resync)
	defer tick.Stop()
	t.Fire()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t:
		case <-tick.C:
		case <-retryAfter:
		}
		retryAfter = nil
		if err := sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := backoff.Step()
			logger.Error(err, "Webhook configuration sync failed; retrying", "what", what, "after", d)
			retryAfter = time.After(d)
			continue
		}
		backoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30}
	}
}

// CABundleInjector keeps the CA bundle of the binary's webhook
// configurations equal to the one its certificates need. Every replica runs
// one: the bundle must be right before the first request, whoever leads.
type CABundleInjector struct {
	Configs Configurations
	Refs    []ConfigRef
	bundleSource
}

// bundleSource is where a writer of the CA bundle (CABundleInjector,
// CRDConversion) takes it from, and when it writes.
type bundleSource struct {
	// Bundle returns the PEM bundle; nil means "unknown yet": nothing written.
	Bundle func() []byte
	// Refresh, if set, reloads the certificates before each sync, so a
	// replica never writes back a bundle another replica has just replaced
	// (a CA rotation) from a stale copy.
	Refresh func(ctx context.Context) error
	// Resync re-checks what was written (e.g. after a re-apply of the
	// manifests emptied the caBundle); default 1m.
	Resync  time.Duration
	trigger Trigger
}

func newBundleSource(bundle func() []byte) bundleSource {
	return bundleSource{Bundle: bundle, Resync: time.Minute, trigger: NewTrigger()}
}

// Trigger asks for a check now (after a certificate change).
func (b *bundleSource) Trigger() { b.trigger.Fire() }

// current refreshes the certificates (when Refresh is set) and returns the
// bundle.
func (b *bundleSource) current(ctx context.Context) ([]byte, error) {
	if b.Refresh != nil {
		if err := b.Refresh(ctx); err != nil {
			return nil, err
		}
	}
	return b.Bundle(), nil
}

// NewCABundleInjector injects bundle() into refs.
func NewCABundleInjector(client kubernetes.Interface, bundle func() []byte, refs ...ConfigRef) *CABundleInjector {
	return &CABundleInjector{Configs: Configurations{Client: client}, Refs: refs, bundleSource: newBundleSource(bundle)}
}

// Sync writes the bundle into each configuration that lacks it. A missing
// configuration is an error (retried): the manifests install them.
func (i *CABundleInjector) Sync(ctx context.Context) error {
	bundle, err := i.current(ctx)
	if err != nil || len(bundle) == 0 {
		return err
	}
	var errs []error
	for _, ref := range i.Refs {
		wrote, err := i.Configs.Edit(ctx, ref, SetCABundle(bundle))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if wrote {
			klog.FromContext(ctx).Info("Wrote the CA bundle into the webhook configuration", "configuration", ref.String())
		}
	}
	return errors.Join(errs...)
}

// Run syncs until ctx is done.
func (i *CABundleInjector) Run(ctx context.Context) {
	runLoop(ctx, i.trigger, i.Resync, "caBundle", i.Sync)
}

// IsNotFound reports whether err says a configuration does not exist.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// WatchConfig returns an informer factory watching ref's configuration only
// (list and watch with a metadata.name field selector, which RBAC
// authorizes by resourceNames) that calls every trigger when it appears or
// changes: a scope reset by a re-apply of the manifests (kubectl apply
// --server-side --force-conflicts on an upgrade writes the shipped
// "false") is restored at once, not at the next resync. Register the
// factory on every replica (kit/app AddReplicaInformerFactory).
func WatchConfig(client kubernetes.Interface, ref ConfigRef, triggers ...func()) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
		}))
	var inf cache.SharedIndexInformer
	switch ref.Kind {
	case Mutating:
		inf = f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	case Validating:
		inf = f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
	default:
		return nil, fmt.Errorf("unknown webhook configuration kind %q", ref.Kind)
	}
	fire := func() {
		for _, t := range triggers {
			t()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { fire() },
		UpdateFunc: func(any, any) { fire() },
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", ref, err)
	}
	return f, nil
}
