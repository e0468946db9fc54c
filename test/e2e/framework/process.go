package framework

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Process is a running controller binary. Its combined output goes to a file that is printed when the test
// fails; it is stopped with SIGTERM (what the kubelet sends) when the test ends.
type Process struct {
	Name       string
	HealthURL  string // http://127.0.0.1:<port>, serving /healthz and /readyz
	MetricsURL string // http://127.0.0.1:<port>, serving /metrics
	cmd        *exec.Cmd
	logPath    string
	done       chan struct{}
}

// Start runs bin with args, on free health and metrics ports of its own.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	ports := FreePorts(t, 2)
	name := filepath.Base(bin)
	p := &Process{
		Name:       name,
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		HealthURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		logPath:    filepath.Join(t.TempDir(), name+".log"),
		done:       make(chan struct{}),
	}
	args = append([]string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
	}, args...)
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Log())
		}
	})
	return p
}

// Stop sends SIGTERM and waits for the process to exit.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not exit within 30s of SIGTERM", p.Name)
	}
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// PID returns the process id (for /proc accounting).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Log returns what the process wrote so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Status returns the HTTP status of a health endpoint (e.g. "/readyz"), or 0 when it does not answer.
func (p *Process) Status(path string) int {
	resp, err := http.Get(p.HealthURL + path)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Metrics returns the body of /metrics.
func (p *Process) Metrics(t testing.TB) string {
	t.Helper()
	resp, err := http.Get(p.MetricsURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// FreePorts returns n distinct ports that were free on 127.0.0.1 a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}
