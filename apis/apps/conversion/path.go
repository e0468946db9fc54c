package conversion

import (
	"fmt"
	"strings"
)

// path is a field of an unstructured object, one map key per element.
type path []string

func p(keys ...string) path { return path(keys) }

func annotationPath(key string) path { return p("metadata", "annotations", key) }

func labelPath(key string) path { return p("metadata", "labels", key) }

// String is the field as written in error messages: spec.scaleStrategy,
// metadata.annotations[daemonset.kruise.io/progressive-create-pod].
func (f path) String() string {
	var b strings.Builder
	for i, k := range f {
		if i > 0 && (f[i-1] == "annotations" || f[i-1] == "labels") && i == 2 && f[0] == "metadata" {
			b.WriteString("[" + k + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// pointer is the field as a JSON pointer (RFC 6901), the stash's key.
func (f path) pointer() string {
	var b strings.Builder
	for _, k := range f {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(k))
	}
	return b.String()
}

// getPath reads a field; an intermediate value that is not an object is an
// error naming it.
func getPath(obj map[string]interface{}, f path) (interface{}, bool, error) {
	cur := obj
	for i, k := range f {
		v, ok := cur[k]
		if !ok {
			return nil, false, nil
		}
		if i == len(f)-1 {
			return v, true, nil
		}
		if v == nil {
			return nil, false, nil
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil, false, fmt.Errorf("%s: must be an object, not %T", f[:i+1], v)
		}
		cur = m
	}
	return nil, false, nil
}

// getString reads a field that must be a string when present.
func getString(obj map[string]interface{}, f path) (string, bool, error) {
	v, ok, err := getPath(obj, f)
	if err != nil || !ok {
		return "", false, err
	}
	s, isString := v.(string)
	if !isString {
		return "", false, fmt.Errorf("%s: must be a string, not %T", f, v)
	}
	return s, true, nil
}

// setPath writes a field, creating missing intermediate objects.
func setPath(obj map[string]interface{}, f path, v interface{}) error {
	cur := obj
	for i, k := range f[:len(f)-1] {
		next, ok := cur[k]
		if !ok || next == nil {
			m := map[string]interface{}{}
			cur[k] = m
			cur = m
			continue
		}
		m, isMap := next.(map[string]interface{})
		if !isMap {
			return fmt.Errorf("%s: must be an object, not %T", f[:i+1], next)
		}
		cur = m
	}
	cur[f[len(f)-1]] = v
	return nil
}

// deletePath removes a field. metadata.labels and metadata.annotations are
// removed when they become empty, so that moving the last label or
// annotation into a field and back leaves no empty map behind.
func deletePath(obj map[string]interface{}, f path) error {
	parent, ok, err := getPath(obj, f[:len(f)-1])
	if err != nil || !ok || parent == nil {
		return err
	}
	m, isMap := parent.(map[string]interface{})
	if !isMap {
		return fmt.Errorf("%s: must be an object, not %T", f[:len(f)-1], parent)
	}
	delete(m, f[len(f)-1])
	if len(m) == 0 && len(f) == 3 && f[0] == "metadata" && (f[1] == "labels" || f[1] == "annotations") {
		if md, ok := obj["metadata"].(map[string]interface{}); ok {
			delete(md, f[1])
		}
	}
	return nil
}

// popAnnotation removes an annotation and returns its value.
func popAnnotation(obj map[string]interface{}, key string) (string, bool, error) {
	f := annotationPath(key)
	v, ok, err := getString(obj, f)
	if err != nil || !ok {
		return "", false, err
	}
	return v, true, deletePath(obj, f)
}
