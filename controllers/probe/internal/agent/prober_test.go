package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestNetProber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/slow":
			<-r.Context().Done() // answers only once the prober gave up
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	closed := func() int { // a port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		return p
	}()
	get := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}}
	}
	tcp := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}
	cases := []struct {
		name    string
		h       corev1.ProbeHandler
		port    int
		timeout time.Duration
		want    appsv1alpha1.ProbeState
	}{
		{"tcp open", tcp, port, time.Second, ok},
		{"tcp closed", tcp, closed, time.Second, fail},
		{"http 200", get("/ok"), port, time.Second, ok},
		{"http 503", get("/bad"), port, time.Second, fail},
		{"http timeout", get("/slow"), port, 200 * time.Millisecond, fail},
		{"exec without a CRI runtime", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, 0, time.Second, unk},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := NewProber(nil).Probe(context.Background(), Target{Handler: tc.h, IP: host, Port: tc.port, Timeout: tc.timeout})
			if got != tc.want {
				t.Fatalf("Probe = %s (%q), want %s", got, msg, tc.want)
			}
			if got == fail && msg == "" {
				t.Fatal("failure without a message")
			}
		})
	}
}

func TestProbePort(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	cases := []struct {
		name    string
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{"number", intstr.FromInt32(80), 80, false},
		{"numeric string", intstr.FromString("81"), 81, false},
		{"named port", intstr.FromString("http"), 8080, false},
		{"unknown name", intstr.FromString("grpc"), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probePort(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: tc.port}}, c)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("probePort = %d, %v; want %d, err %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// An httpGet probe follows redirects on the pod's host only, as the kubelet
// does: a redirect to another host is not followed (the agent runs on the
// node's network; following would let a pod aim it at anything the node
// reaches) and counts as a success with a message, the kubelet's "Warning".
func TestHTTPProbeRedirects(t *testing.T) {
	var offHostHits atomic.Int32
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offHostHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	// Another host: a second loopback address (all of 127.0.0.0/8 is on lo).
	ol, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	go func() { _ = other.Serve(ol) }()
	defer other.Close()
	offHost := "http://" + ol.Addr().String() + "/bad"

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/bad":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/same-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/same-bad":
			http.Redirect(w, r, "/bad", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/away":
			http.Redirect(w, r, offHost, http.StatusFound)
		}
	}))
	defer srv.Close()
	_, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	cases := []struct {
		path    string
		want    appsv1alpha1.ProbeState
		message string
	}{
		{"/same-ok", ok, ""},
		{"/same-bad", fail, "HTTP probe failed with statuscode: 503"},
		{"/loop", fail, "stopped after 10 redirects"},
		{"/away", ok, "Probe terminated redirects (HTTP 302 to " + offHost + ")"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			h := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: tc.path, Port: intstr.FromInt32(int32(port))}}
			got, msg := NewProber(nil).Probe(context.Background(), Target{Handler: h, IP: "127.0.0.1", Port: port, Timeout: 2 * time.Second})
			if got != tc.want || !strings.Contains(msg, tc.message) {
				t.Errorf("Probe(%s) = %s %q, want %s %q", tc.path, got, msg, tc.want, tc.message)
			}
		})
	}
	if n := offHostHits.Load(); n != 0 {
		t.Errorf("the other host got %d requests: an off-host redirect was followed", n)
	}
}
