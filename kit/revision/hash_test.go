package revision

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"
)

// The expected hashes were computed outside Go (a few lines of Python doing
// FNV-1 32 over data+decimal(collisionCount) and mapping each decimal digit d
// of the sum to "bcdfghjklmnpqrstvwxz2456789"[ord(d) % 27]).
func TestHashPinned(t *testing.T) {
	tests := []struct {
		data  string
		count *int32
		want  string
	}{
		{"", nil, "65bb57b6b5"}, // FNV-1 offset basis 2166136261
		{"", ptr.To[int32](0), "d8bfb7bc"},
		{"abc", nil, "557874f5f9"},
		{"abc", ptr.To[int32](0), "755d7b7869"},
		{"abc", ptr.To[int32](1), "755d7b7868"},
		{"abc", ptr.To[int32](12), "754bdd477d"},
		{webPatch, nil, "59fcdf9bbc"},
		{webPatch, ptr.To[int32](3), "7cd7c66f7d"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%.20s/%v", tt.data, ptrString(tt.count))
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, Hash([]byte(tt.data), tt.count))
		})
	}
}

// referenceHash is an independent, deliberately naive statement of the
// algorithm, used to check Hash on inputs nobody pinned.
func referenceHash(data string, count *int32) string {
	if count != nil {
		data += fmt.Sprint(*count)
	}
	sum := uint64(0x811c9dc5)
	for i := 0; i < len(data); i++ {
		sum = (sum * 0x01000193) % (1 << 32)
		sum ^= uint64(data[i])
	}
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b strings.Builder
	for _, d := range fmt.Sprint(sum) {
		b.WriteByte(alphabet[int(d)%len(alphabet)])
	}
	return b.String()
}

func TestHashMatchesReference(t *testing.T) {
	inputs := []string{"x", "hello world", `{"spec":{"template":{}}}`, strings.Repeat("ab", 300)}
	counts := []*int32{nil, ptr.To[int32](0), ptr.To[int32](7), ptr.To[int32](2147483647), ptr.To[int32](-1)}
	for _, in := range inputs {
		for _, c := range counts {
			assert.Equal(t, referenceHash(in, c), Hash([]byte(in), c), "data %.10q count %v", in, ptrString(c))
		}
	}
	// nil and 0 differ: the digits of the count are part of the hashed bytes.
	assert.NotEqual(t, Hash([]byte("abc"), nil), Hash([]byte("abc"), ptr.To[int32](0)))
}

func TestName(t *testing.T) {
	long := strings.Repeat("p", 240)
	tests := []struct {
		parent, hash, want string
	}{
		{"web", "5dfdff488f", "web-5dfdff488f"},
		{"a-b-c", "x", "a-b-c-x"},
		{long, "h", strings.Repeat("p", 223) + "-h"},
		{strings.Repeat("q", 223), "h", strings.Repeat("q", 223) + "-h"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Name(tt.parent, tt.hash))
	}
}

func TestShortHash(t *testing.T) {
	assert.Equal(t, "5dfdff488f", ShortHash("web-5dfdff488f"))
	assert.Equal(t, "5dfdff488f", ShortHash("my-web-5dfdff488f"))
	assert.Equal(t, "abc", ShortHash("abc"))
	assert.Equal(t, "", ShortHash("web-"))
}

func ptrString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
