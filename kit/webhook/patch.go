package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes value for add and replace even when it is null.
func (o patchOp) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// CreatePatch returns the JSON patch (RFC 6902) that turns the JSON document
// original into mutated, or nil when they are equal. Objects are diffed key
// by key; a list grown at its end gets "add" operations, any other changed
// list is replaced whole (pod containers, volumes: small lists whose order
// matters), which keeps patches readable in audit logs.
func CreatePatch(original, mutated []byte) ([]byte, error) {
	var a, b any
	if err := decodeJSON(original, &a); err != nil {
		return nil, fmt.Errorf("decode original object: %w", err)
	}
	if err := decodeJSON(mutated, &b); err != nil {
		return nil, fmt.Errorf("decode mutated object: %w", err)
	}
	var ops []patchOp
	diff("", a, b, &ops)
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}

func decodeJSON(data []byte, into *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // keep integers exact
	return d.Decode(into)
}

func diff(path string, a, b any, ops *[]patchOp) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escapePointer(k)
			av, ina := am[k]
			bv, inb := bm[k]
			switch {
			case !inb:
				*ops = append(*ops, patchOp{Op: "remove", Path: p})
			case !ina:
				*ops = append(*ops, patchOp{Op: "add", Path: p, Value: bv})
			default:
				diff(p, av, bv, ops)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(bl) > len(al) && reflect.DeepEqual(al, bl[:len(al)]) {
		for i := len(al); i < len(bl); i++ {
			*ops = append(*ops, patchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: bl[i]})
		}
		return
	}
	if path == "" {
		// The root changed type: not an object diff the API server can apply
		// as a patch; never happens for Kubernetes objects.
		*ops = append(*ops, patchOp{Op: "replace", Path: "", Value: b})
		return
	}
	*ops = append(*ops, patchOp{Op: "replace", Path: path, Value: b})
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
