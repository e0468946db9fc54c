package podcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Action is one pod write the Fake received.
type Action struct {
	Verb        Verb
	Namespace   string
	Name        string // the pod's name ("" for a create under generateName)
	Subresource string // "status" for PatchStatus
	PatchType   types.PatchType
	Patch       []byte      // patches
	Pod         *corev1.Pod // creates: the pod as sent; deletes: the pod deleted
	DryRun      bool
}

func (a Action) String() string {
	s := fmt.Sprintf("%s %s/%s", a.Verb, a.Namespace, a.Name)
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Patch != nil {
		s += " " + string(a.Patch)
	}
	return s
}

// Fake is a PodControl for tests of a sync: it records every write
// (Actions) instead of sending it, answers with the pod as the API server
// would have made it (a patch applied to the pod given, a generated name
// and a UID for a create), and keeps expectations exactly as the real one
// does (the same code).
type Fake struct {
	control
	// Err, when set, is asked before each write; a non-nil error is that
	// write's answer (the action is still recorded).
	Err func(Action) error

	mu      sync.Mutex
	actions []Action
	seq     int
}

// NewFake returns an empty Fake.
func NewFake() *Fake {
	f := &Fake{}
	f.control = control{w: f}
	return f
}

// Actions returns the writes received so far, in order.
func (f *Fake) Actions() []Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Action(nil), f.actions...)
}

// ClearActions forgets the writes received so far.
func (f *Fake) ClearActions() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = nil
}

func (f *Fake) record(a Action) (int, error) {
	f.mu.Lock()
	f.actions = append(f.actions, a)
	f.seq++
	seq := f.seq
	f.mu.Unlock()
	if f.Err != nil {
		return seq, f.Err(a)
	}
	return seq, nil
}

func (f *Fake) create(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	seq, err := f.record(Action{Verb: VerbCreate, Namespace: pod.Namespace, Name: pod.Name, Pod: pod.DeepCopy()})
	if err != nil {
		return nil, err
	}
	out := pod.DeepCopy()
	if out.Name == "" {
		out.Name = fmt.Sprintf("%s%05d", out.GenerateName, seq)
	}
	if out.UID == "" {
		out.UID = types.UID("uid-" + out.Name)
	}
	return out, nil
}

func (f *Fake) delete(_ context.Context, pod *corev1.Pod) error {
	_, err := f.record(Action{Verb: VerbDelete, Namespace: pod.Namespace, Name: pod.Name, Pod: pod.DeepCopy()})
	return err
}

func (f *Fake) patch(_ context.Context, pod *corev1.Pod, pt types.PatchType, data []byte, dryRun bool, subresources ...string) (*corev1.Pod, error) {
	a := Action{Verb: VerbPatch, Namespace: pod.Namespace, Name: pod.Name, PatchType: pt, Patch: append([]byte(nil), data...), DryRun: dryRun}
	if len(subresources) > 0 {
		a.Subresource = subresources[0]
	}
	if _, err := f.record(a); err != nil {
		return nil, err
	}
	if dryRun {
		return pod, nil
	}
	return applyPatch(pod, data)
}

// applyPatch is the API server's answer to a patch of pod: a strategic
// merge for every patch type the controllers send (their merge patches set
// maps and scalars only, where both agree).
func applyPatch(pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
	doc, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	doc, err = strategicpatch.StrategicMergePatch(doc, patch, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("apply patch to pod %s: %w", pod.Name, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(doc, out); err != nil {
		return nil, err
	}
	return out, nil
}
