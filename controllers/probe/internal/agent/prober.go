package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilexec "k8s.io/utils/exec"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Target is what one probe attempt runs against.
type Target struct {
	Handler corev1.ProbeHandler
	IP      string
	Port    int
	// ContainerID is the runtime's ID, without the "<runtime>://" prefix.
	ContainerID string
	Timeout     time.Duration
}

// Prober runs one probe attempt and returns its result and a message (why it
// failed). An empty state means the attempt did not run (the node's exec
// slots stayed busy for the whole timeout) and says nothing about the pod.
type Prober interface {
	Probe(ctx context.Context, t Target) (appsv1alpha1.ProbeState, string)
}

// Execer runs a command in a container: the CRI runtime service's ExecSync
// (k8s.io/cri-client), whose error for a non-zero exit carries the code.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// errExecUnsupported: exec probes need the node's CRI runtime (--cri-socket).
var errExecUnsupported = errors.New("exec probes need the node's CRI runtime: probe-agent runs without --cri-socket")

// NewProber returns the prober of tcpSocket and httpGet probes, and of exec
// probes through exec (nil: exec probes are reported Unknown).
func NewProber(exec Execer) Prober { return netProber{exec: exec} }

// netProber runs tcpSocket and httpGet probes over the network, like the
// kubelet: TCP succeeds when the connection opens, HTTP when the status code
// is in [200, 400); exec probes through the CRI: success on exit code 0.
type netProber struct{ exec Execer }

func (p netProber) Probe(ctx context.Context, t Target) (appsv1alpha1.ProbeState, string) {
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	h := t.Handler
	addr := net.JoinHostPort(t.IP, strconv.Itoa(t.Port))
	switch {
	case h.TCPSocket != nil:
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return appsv1alpha1.ProbeFailed, err.Error()
		}
		_ = conn.Close()
		return appsv1alpha1.ProbeSucceeded, ""
	case h.HTTPGet != nil:
		return httpProbe(ctx, h.HTTPGet, addr)
	case h.Exec != nil:
		if p.exec == nil {
			return appsv1alpha1.ProbeUnknown, errExecUnsupported.Error()
		}
		return execProbe(ctx, p.exec, h.Exec.Command, t.ContainerID, t.Timeout)
	}
	return appsv1alpha1.ProbeUnknown, "probe has no handler"
}

func httpProbe(ctx context.Context, g *corev1.HTTPGetAction, addr string) (appsv1alpha1.ProbeState, string) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, addr, path))
	if err != nil {
		return appsv1alpha1.ProbeFailed, fmt.Sprintf("bad probe URL: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return appsv1alpha1.ProbeFailed, fmt.Sprintf("build request: %v", err)
	}
	req.Header.Set("User-Agent", "flotilla-probe-agent")
	for _, hd := range g.HTTPHeaders {
		if strings.EqualFold(hd.Name, "host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	// A probe keeps no connection open between periods (the kubelet does the
	// same) and, like the kubelet, does not verify a pod's certificate.
	client := &http.Client{
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet probe semantics
		},
		CheckRedirect: sameHostRedirects,
	}
	resp, err := client.Do(req)
	if err != nil {
		return appsv1alpha1.ProbeFailed, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		if resp.StatusCode >= http.StatusMultipleChoices {
			// A redirect sameHostRedirects did not follow: the kubelet's
			// "Warning" result, which counts as a success (the kubelet adds a
			// Warning event; the message says it here). No response body: a
			// pod's page has no business in a pod condition.
			return appsv1alpha1.ProbeSucceeded, fmt.Sprintf("Probe terminated redirects (HTTP %d to %s)", resp.StatusCode, truncate(resp.Header.Get("Location"), 256))
		}
		return appsv1alpha1.ProbeSucceeded, ""
	}
	return appsv1alpha1.ProbeFailed, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// sameHostRedirects follows a redirect only to the host the probe asked
// (any port or scheme), at most 10 of them, as the kubelet's prober does
// (k8s.io/kubernetes pkg/probe/http RedirectChecker without
// followNonLocalRedirects). The agent runs on the node's network: following
// a pod's redirect to another host would let any pod make the node agent
// send GETs to addresses only the node reaches (cloud metadata, the
// kubelet, other tenants' pods) and report whether they answer.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// probePort resolves the probe's port: a number, or a container port name
// (the controller normally resolves names before writing the NodePodProbe).
func probePort(h corev1.ProbeHandler, c *corev1.Container) (int, error) {
	var p intstr.IntOrString
	switch {
	case h.TCPSocket != nil:
		p = h.TCPSocket.Port
	case h.HTTPGet != nil:
		p = h.HTTPGet.Port
	default:
		return 0, nil
	}
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("port %q not found in container", p.StrVal)
}

// execProbe: exit code 0 succeeds; otherwise Failed with the command's stderr
// (what the pod condition's message shows), or the runtime's error.
func execProbe(ctx context.Context, exec Execer, cmd []string, containerID string, timeout time.Duration) (appsv1alpha1.ProbeState, string) {
	_, stderr, err := exec.ExecSync(ctx, containerID, cmd, timeout)
	if err == nil {
		return appsv1alpha1.ProbeSucceeded, ""
	}
	if errors.Is(err, errExecBusy) {
		return execProbeSkipped, err.Error()
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		msg := strings.TrimSpace(string(stderr))
		if msg == "" {
			msg = fmt.Sprintf("command exited with %d", exit.ExitStatus())
		}
		return appsv1alpha1.ProbeFailed, truncate(msg, 1024)
	}
	return appsv1alpha1.ProbeFailed, truncate(err.Error(), 1024)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// runtimeContainerID strips the "<runtime>://" prefix of a pod status ID.
func runtimeContainerID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}
