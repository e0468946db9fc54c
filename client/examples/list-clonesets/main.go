// Command list-clonesets lists CloneSets with the generated clientset and
// then prints the same list from a shared informer's cache (lister).
//
//	go run ./examples/list-clonesets --kubeconfig ~/.kube/config --namespace default
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/client/informers/externalversions"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig (empty: in-cluster config)")
	namespace := flag.String("namespace", metav1.NamespaceAll, "namespace to list (empty: all namespaces)")
	flag.Parse()

	if err := run(*kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// 1. A direct List through the clientset.
	list, err := cs.AppsV1alpha1().CloneSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("clientset: %d CloneSet(s)\n", len(list.Items))
	for i := range list.Items {
		printCloneSet(&list.Items[i])
	}

	// 2. The same through an informer and its lister.
	factory := externalversions.NewSharedInformerFactoryWithOptions(cs, 0, externalversions.WithNamespace(namespace))
	lister := factory.Apps().V1alpha1().CloneSets().Lister()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache for %v did not sync", typ)
		}
	}
	cached, err := lister.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Printf("informer: %d CloneSet(s)\n", len(cached))
	for _, c := range cached {
		printCloneSet(c)
	}
	cancel()
	factory.Shutdown()
	return nil
}

func printCloneSet(c *appsv1alpha1.CloneSet) {
	replicas := int32(1)
	if c.Spec.Replicas != nil {
		replicas = *c.Spec.Replicas
	}
	fmt.Printf("  %s/%s desired=%d updated=%d ready=%d total=%d type=%s\n",
		c.Namespace, c.Name, replicas, c.Status.UpdatedReplicas, c.Status.ReadyReplicas,
		c.Status.Replicas, c.Spec.UpdateStrategy.Type)
}
