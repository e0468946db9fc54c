package realnode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/flotilla-dev/flotilla/kit/node/cri"
)

// pushImageVariant puts <registry>/flotilla/busybox:<tag> in the local registry (idempotent): v1's manifest and
// layer with v1's image config as edit leaves it. A different config is a different image ID, so what a test
// does to its variant on the node (pull, remove) never touches the v1/v2 images other tests run.
func pushImageVariant(t *testing.T, registry, tag string, edit func(config map[string]any)) string {
	t.Helper()
	base := "http://" + registry + "/v2/flotilla/busybox"
	const manifestType = "application/vnd.oci.image.manifest.v1+json"
	get := func(url string) []byte {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", manifestType)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
		return b
	}
	send := func(method, url, contentType string, body []byte) *http.Response {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		require.NoError(t, err)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, url, b)
		return resp
	}

	var manifest map[string]any
	require.NoError(t, json.Unmarshal(get(base+"/manifests/v1"), &manifest))
	cfgDesc := manifest["config"].(map[string]any)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(get(base+"/blobs/"+cfgDesc["digest"].(string)), &cfg))
	edit(cfg["config"].(map[string]any))
	cfgBytes, err := json.Marshal(cfg)
	require.NoError(t, err)
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256(cfgBytes))

	loc := send(http.MethodPost, base+"/blobs/uploads/", "", nil).Header.Get("Location")
	require.NotEmpty(t, loc, "registry gave no upload location")
	if !strings.HasPrefix(loc, "http") {
		loc = "http://" + registry + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	send(http.MethodPut, loc+sep+"digest="+digest, "application/octet-stream", cfgBytes)
	cfgDesc["digest"], cfgDesc["size"] = digest, len(cfgBytes)
	manBytes, err := json.Marshal(manifest)
	require.NoError(t, err)
	send(http.MethodPut, base+"/manifests/"+tag, manifestType, manBytes)
	return registry + "/flotilla/busybox:" + tag
}

// pullTestImage pushes the variant of busybox:v1 that the pull tests own (label dev.flotilla.image=<tag>) and
// returns its name.
func pullTestImage(t *testing.T, registry, tag string) string {
	return pushImageVariant(t, registry, tag, func(c map[string]any) {
		c["Labels"] = map[string]any{"dev.flotilla.image": tag}
	})
}

// authRegistry serves the local registry behind HTTP basic auth (user:password) on a port of 127.0.0.1 for the
// test's lifetime, and returns its address. containerd pulls from a loopback registry without hosts.toml over
// plain HTTP and answers its 401 Basic challenge with the CRI AuthConfig, as from any registry that wants a login.
func authRegistry(t *testing.T, registry, user, password string) string {
	return (&registryFront{User: user, Password: password}).serve(t, registry)
}

// registryFront is a front of the local registry: with a User, it wants that login; while Hold is set, it holds
// every request (a pull that hangs) until Release.
type registryFront struct {
	User, Password string
	mu             sync.Mutex
	hold           chan struct{}
}

// Hold makes the front hold requests from now on.
func (f *registryFront) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold == nil {
		f.hold = make(chan struct{})
	}
}

// Release lets held and later requests through.
func (f *registryFront) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
}

func (f *registryFront) serve(t *testing.T, registry string) string {
	t.Helper()
	upstream, err := url.Parse("http://" + registry)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		hold := f.hold
		f.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if u, p, ok := r.BasicAuth(); f.User != "" && (!ok || u != f.User || p != f.Password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="flotilla-test"`)
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { f.Release(); _ = srv.Close() })
	return ln.Addr().String()
}

// nodeImages connects to the real node's CRI image service through kit/node/cri.
func nodeImages(t *testing.T, endpoint string) cri.Images {
	t.Helper()
	images, err := cri.ConnectImages(context.Background(), endpoint)
	require.NoError(t, err)
	return images
}

// removeFromNode removes image from the node if it is there (only test-owned variants: their image IDs are the
// tests' own) and checks it is gone.
func removeFromNode(t *testing.T, images cri.Images, image string) {
	t.Helper()
	ctx := context.Background()
	img, err := cri.Present(ctx, images, image)
	require.NoError(t, err)
	if img != nil {
		require.NoError(t, images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.Id}))
	}
	img, err = cri.Present(ctx, images, image)
	require.NoError(t, err)
	require.Nil(t, img, "%s still on the node", image)
}

// dockerConfigSecret is a kubernetes.io/dockerconfigjson secret with one registry's username and password.
func dockerConfigSecret(registry, user, password string) corev1.Secret {
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"username": user, "password": password}}})
	return corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
}
