package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilexec "k8s.io/utils/exec"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

type fakeExec struct {
	stderr      string
	err         error
	containerID string
	cmd         []string
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.containerID, f.cmd = id, cmd
	return nil, []byte(f.stderr), f.err
}

func TestExecProbe(t *testing.T) {
	cases := []struct {
		name    string
		exec    fakeExec
		want    appsv1alpha1.ProbeState
		wantMsg string
	}{
		{"exit 0", fakeExec{}, ok, ""},
		{"non-zero exit: stderr is the message", fakeExec{stderr: "busy\n", err: utilexec.CodeExitError{Err: errors.New("exited 1"), Code: 1}}, fail, "busy"},
		{"non-zero exit without stderr", fakeExec{err: utilexec.CodeExitError{Err: errors.New("exited 2"), Code: 2}}, fail, "command exited with 2"},
		{"runtime error", fakeExec{err: errors.New("rpc error: DeadlineExceeded")}, fail, "rpc error: DeadlineExceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := tc.exec
			got, msg := NewProber(&ex).Probe(context.Background(), Target{
				Handler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check", "idle"}}},
				ContainerID: runtimeContainerID("containerd://abc"), Timeout: time.Second})
			if got != tc.want || msg != tc.wantMsg {
				t.Fatalf("Probe = %s %q, want %s %q", got, msg, tc.want, tc.wantMsg)
			}
			if ex.containerID != "abc" || len(ex.cmd) != 2 {
				t.Fatalf("ExecSync got container %q cmd %v", ex.containerID, ex.cmd)
			}
		})
	}
}
