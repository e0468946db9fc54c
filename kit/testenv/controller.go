package testenv

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// InformerFactory is what the generated shared informer factories (client-go's
// and Flotilla's) have in common.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// Controller is a reconciler under test (kit/app.Controller without Name).
type Controller interface {
	Run(ctx context.Context, workers int) error
}

// StartController starts the informer factories and runs c with workers
// workers, in-process, with a logger naming the test. The returned function
// cancels it — aborting its in-flight requests, as a killed process would —,
// waits until Run has returned and shuts the factories down; it is also
// called when the test ends, and only the first call has an effect. Requesting
// informers from the factories must be done before (that is, in c's
// constructor).
func StartController(t testing.TB, c Controller, workers int, factories ...InformerFactory) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithValues("test", t.Name())))
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, workers) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("controller Run: %v", err)
			}
			for _, f := range factories {
				f.Shutdown()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// EventRecorder returns a recorder that writes Events as component, for
// objects of the types in scheme, each in its object's namespace (events of
// cluster-scoped objects in "default", as in the binaries); its broadcaster
// stops when the test ends. The unnamed string (a namespace once) is ignored:
// a sink bound to one namespace refuses every cluster-scoped object's event,
// and the broadcaster's retries of those, ten seconds apart, hold up all others.
func EventRecorder(t testing.TB, kube kubernetes.Interface, _, component string, scheme *runtime.Scheme) record.EventRecorder {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: component})
}
