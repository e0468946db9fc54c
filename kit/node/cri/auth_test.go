package cri

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func dockerConfigJSON(auths string) corev1.Secret {
	return corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{` + auths + `}}`)}}
}

func TestCredentials(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("enc:secret"))
	secrets := []corev1.Secret{
		dockerConfigJSON(`"127.0.0.1:5051": {"username": "alice", "password": "pw"},
			"*.example.com": {"auth": "` + b64 + `"},
			"registry.example.com/team": {"username": "team", "identitytoken": "tok"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "h"}`),
		{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"quay.io": {"username": "q"}}`)}},
		{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("y")}},
		dockerConfigJSON(`not json`),
	}
	users := func(auths []*runtimeapi.AuthConfig) []string {
		var out []string
		for _, a := range auths {
			out = append(out, a.Username)
		}
		return out
	}
	for _, tc := range []struct {
		image string
		want  []string
	}{
		{"127.0.0.1:5051/flotilla/busybox:v1", []string{"alice"}},
		{"127.0.0.1:5050/flotilla/busybox:v1", nil},                  // another port
		{"127.0.0.1/flotilla/busybox:v1", nil},                       // no port
		{"registry.example.com/team/app:1", []string{"team", "enc"}}, // path key first (more specific), then the glob
		{"registry.example.com/other/app:1", []string{"enc"}},
		{"a.b.example.com/app:1", nil}, // a glob matches one part only
		{"busybox", []string{"hub"}},
		{"library/busybox@sha256:abc", []string{"hub"}},
		{"quay.io/x/y:z", []string{"q"}},
		{"ghcr.io/x/y", nil},
	} {
		t.Run(tc.image, func(t *testing.T) {
			assert.Equal(t, tc.want, users(Credentials(tc.image, secrets)))
		})
	}
	auths := Credentials("x.example.com/app", secrets)
	require.Len(t, auths, 1)
	assert.Equal(t, "secret", auths[0].Password, "auth is decoded into username and password")
	assert.Equal(t, b64, auths[0].Auth)
	assert.Empty(t, auths[0].ServerAddress, "containerd refuses a host:port server address (the real-node test saw it)")
	assert.Equal(t, "tok", Credentials("registry.example.com/team/app", secrets)[0].IdentityToken)
}

func TestPull(t *testing.T) {
	ctx := context.Background()
	f := NewFakeImages(map[string]string{"r/open:1": "", "r/locked:1": "bob"})
	_, err := Pull(ctx, f, "r/open:1", nil, nil)
	require.NoError(t, err)
	img, err := Present(ctx, f, "r/open:1")
	require.NoError(t, err)
	require.NotNil(t, img)

	_, err = Pull(ctx, f, "r/locked:1", nil, nil)
	require.ErrorContains(t, err, "401")
	_, err = Pull(ctx, f, "r/locked:1", []*runtimeapi.AuthConfig{{Username: "eve"}, {Username: "mallory"}}, nil)
	require.ErrorContains(t, err, `as "eve"`)
	require.ErrorContains(t, err, `as "mallory"`)
	_, err = Pull(ctx, f, "r/locked:1", []*runtimeapi.AuthConfig{{Username: "eve"}, {Username: "bob"}}, nil)
	require.NoError(t, err, "the second auth works")

	require.NoError(t, f.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "r/open:1"}))
	img, err = Present(ctx, f, "r/open:1")
	require.NoError(t, err)
	assert.Nil(t, img)
}
