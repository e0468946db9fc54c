package apis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/flotilla-dev/flotilla/apis/testing/fixtures"
)

func objName(k fixtures.Kind, i int) string {
	n := fmt.Sprintf("%s-%d", strings.ToLower(k.Kind), i)
	if !k.Namespaced {
		n += "-" + rand.String(5)
	}
	return n
}

// Every kind and version accepts its minimal object and stores the
// schema defaults.
func TestMinimalObjectsGetDefaults(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for i, k := range fixtures.Kinds {
		t.Run(k.APIVersion()+"/"+k.Kind, func(t *testing.T) {
			h.skipWithoutConversion(t, k)
			name := objName(k, i)
			obj := jsonRoundTrip(t, fixtures.Minimal(k, name, h.ns))
			created, err := h.resource(k).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldValidation: "Strict"})
			require.NoError(t, err)
			if !k.Namespaced {
				t.Cleanup(func() { _ = h.resource(k).Delete(context.Background(), name, metav1.DeleteOptions{}) })
			}
			assertDefaults(t, k.Kind, obj, created.Object)
		})
	}
}

// The table of invalid specs (shared with the offline tests in apis/) is
// rejected by the API server with a message naming the field.
func TestInvalidSpecsAreRejected(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	require.GreaterOrEqual(t, len(fixtures.InvalidSpecs), 15)
	for i, c := range fixtures.InvalidSpecs {
		t.Run(c.Name, func(t *testing.T) {
			k := c.KindFor()
			name := objName(k, i)
			obj := fixtures.Minimal(k, name, h.ns)
			if c.Mutate != nil {
				c.Mutate(obj)
			}
			obj = jsonRoundTrip(t, obj)
			var err error
			if c.Update != nil {
				h.skipWithoutConversion(t, k)
				created, cerr := h.resource(k).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
				require.NoError(t, cerr, "the object before the update must be valid")
				if !k.Namespaced {
					t.Cleanup(func() { _ = h.resource(k).Delete(context.Background(), name, metav1.DeleteOptions{}) })
				}
				c.Update(created.Object)
				_, err = h.resource(k).Update(ctx, created, metav1.UpdateOptions{})
			} else {
				var created *unstructured.Unstructured
				created, err = h.resource(k).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
				if err == nil && !k.Namespaced {
					_ = h.resource(k).Delete(ctx, created.GetName(), metav1.DeleteOptions{})
				}
			}
			require.Error(t, err, "expected the API server to reject the spec")
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			assert.Contains(t, err.Error(), c.WantField, "the error must name the field")
			t.Logf("rejected: %v", err)
		})
	}
}
