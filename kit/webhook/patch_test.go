package webhook

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// The patch applied by the API server's own JSON-patch library turns the
// original into the mutated object, and stays small and readable.
func TestCreatePatch(t *testing.T) {
	cases := []struct {
		name, a, b string
		wantOps    string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, ``},
		{"add key", `{"metadata":{}}`, `{"metadata":{"annotations":{"x/y":"1"}}}`,
			`[{"op":"add","path":"/metadata/annotations","value":{"x/y":"1"}}]`},
		{"escaped key", `{"a":{"k/1":"x","t~":"y"}}`, `{"a":{"k/1":"z","t~":"y"}}`,
			`[{"op":"replace","path":"/a/k~11","value":"z"}]`},
		{"remove", `{"a":1,"b":2}`, `{"a":1}`, `[{"op":"remove","path":"/b"}]`},
		{"append to list", `{"l":[1,2]}`, `{"l":[1,2,3,4]}`,
			`[{"op":"add","path":"/l/2","value":3},{"op":"add","path":"/l/3","value":4}]`},
		{"prepend replaces list", `{"l":[{"n":"app"}]}`, `{"l":[{"n":"side"},{"n":"app"}]}`,
			`[{"op":"replace","path":"/l","value":[{"n":"side"},{"n":"app"}]}]`},
		{"null value", `{"a":1}`, `{"a":null}`, `[{"op":"replace","path":"/a","value":null}]`},
		{"big integers stay exact", `{"n":9007199254740993}`, `{"n":9007199254740993,"m":1}`,
			`[{"op":"add","path":"/m","value":1}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := CreatePatch([]byte(c.a), []byte(c.b))
			require.NoError(t, err)
			if c.wantOps == "" {
				assert.Nil(t, p)
				return
			}
			assert.JSONEq(t, c.wantOps, string(p))
			patch, err := jsonpatch.DecodePatch(p)
			require.NoError(t, err)
			got, err := patch.Apply([]byte(c.a))
			require.NoError(t, err)
			assert.JSONEq(t, c.b, string(got))
		})
	}
	_, err := CreatePatch([]byte(`{`), []byte(`{}`))
	assert.Error(t, err)
}

func TestPatchedWithoutChangeIsAllowed(t *testing.T) {
	r := Patched([]byte(`{"a":1}`), map[string]any{"a": 1})
	assert.True(t, r.Allowed)
	assert.Nil(t, r.Patch)
	r = Patched([]byte(`{"a":1}`), map[string]any{"a": 2}, "note")
	assert.True(t, r.Allowed)
	assert.Equal(t, []string{"note"}, r.Warnings)
	var ops []map[string]any
	require.NoError(t, json.Unmarshal(r.Patch, &ops))
	assert.Len(t, ops, 1)
}
