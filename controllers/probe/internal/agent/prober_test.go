package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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
