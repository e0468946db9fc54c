package register

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestGroup checks what a register.go exports: the kinds and the meta/v1 types land under the group/version, and
// Resource and Kind qualify names with the group.
func TestGroup(t *testing.T) {
	gv, builder, addToScheme, resource, kind := Group("example.flotilla.dev", "v1", &metav1.Status{}, &metav1.List{})
	assert.Equal(t, schema.GroupVersion{Group: "example.flotilla.dev", Version: "v1"}, gv)
	assert.Equal(t, schema.GroupResource{Group: "example.flotilla.dev", Resource: "things"}, resource("things"))
	assert.Equal(t, schema.GroupKind{Group: "example.flotilla.dev", Kind: "Thing"}, kind("Thing"))

	for name, add := range map[string]func(*runtime.Scheme) error{"builder": builder.AddToScheme, "addToScheme": addToScheme} {
		s := runtime.NewScheme()
		require.NoError(t, add(s), name)
		for _, k := range []string{"Status", "List", "ListOptions", "WatchEvent"} {
			assert.True(t, s.Recognizes(gv.WithKind(k)), "%s: %s registered", name, k)
		}
	}
}
