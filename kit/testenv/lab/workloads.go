package lab

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Workloads returns the create/get/modify/wait helpers (testenv.Objects) of
// one workload kind through client, waiting up to the lab's timeout; a
// failed wait prints the last object's status, which status returns.
func Workloads[T metav1.Object, S any](l *Lab, client testenv.Client[T], status func(T) S) *testenv.Objects[T] {
	o := testenv.ObjectsOf(l.T, client, l.Timeout)
	o.Describe = func(obj T) string { return fmt.Sprintf("%+v", status(obj)) }
	return o
}
