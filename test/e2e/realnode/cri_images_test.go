package realnode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestCRIImageClientOnRealNode: kit/node/cri against the real node's containerd. A test-owned image absent from
// the node is pulled and then seen through ImageStatus; through a registry that wants a login, an anonymous pull
// and a pull with a wrong password fail, and the dockerconfigjson secret whose key is that registry gives the
// credentials that work.
func TestCRIImageClientOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	if realNode(t, env) == "" {
		t.Skip("no real node")
	}
	_, registry, endpoint := probeNode(t, env)
	ctx := context.Background()
	images := nodeImages(t, endpoint)
	image := pullTestImage(t, registry, "pulltest-cri")
	removeFromNode(t, images, image)
	t.Cleanup(func() { removeFromNode(t, images, image) })

	ref, err := cri.Pull(ctx, images, image, nil, nil)
	require.NoError(t, err)
	img, err := cri.Present(ctx, images, image)
	require.NoError(t, err)
	require.NotNil(t, img, "pulled, yet ImageStatus does not have %s", image)
	assert.Equal(t, ref, img.Id)
	assert.Contains(t, img.RepoTags, image)

	locked := authRegistry(t, registry, "flotilla", "s3cret")
	lockedImage := locked + "/flotilla/busybox:pulltest-cri"
	t.Cleanup(func() { removeFromNode(t, images, lockedImage) })
	_, err = cri.Pull(ctx, images, lockedImage, nil, nil)
	require.Error(t, err, "anonymous pull from a registry that wants a login")
	t.Logf("anonymous: %v", err)
	wrong := cri.Credentials(lockedImage, []corev1.Secret{dockerConfigSecret(locked, "flotilla", "wrong")})
	require.Len(t, wrong, 1)
	_, err = cri.Pull(ctx, images, lockedImage, wrong, nil)
	require.Error(t, err, "pull with a wrong password")
	t.Logf("wrong password: %v", err)
	right := cri.Credentials(lockedImage, []corev1.Secret{
		dockerConfigSecret(registry, "other", "x"), dockerConfigSecret(locked, "flotilla", "s3cret")})
	require.Len(t, right, 1, "only the secret whose key is the locked registry matches")
	_, err = cri.Pull(ctx, images, lockedImage, right, nil)
	require.NoError(t, err)
	img, err = cri.Present(ctx, images, lockedImage)
	require.NoError(t, err)
	require.NotNil(t, img)
}
