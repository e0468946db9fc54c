package revision

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"
)

// HashLabel is the label Kubernetes' history helpers (and therefore
// OpenKruise) put on every ControllerRevision, holding the hash part of its
// name.
const HashLabel = "controller.kubernetes.io/hash"

// maxPrefixLen keeps "<parent>-<hash>" within the 253-byte object name limit.
const maxPrefixLen = 223

// FNV-1 32-bit parameters.
const (
	fnvOffset32 uint32 = 2166136261
	fnvPrime32  uint32 = 16777619
)

// Hash returns the hash Kubernetes gives a ControllerRevision with raw data
// data: the 32-bit FNV-1 hash (multiply, then xor — Kubernetes uses
// hash/fnv.New32, not New32a) of data followed, when collisionCount is not
// nil, by the decimal digits of *collisionCount; the sum is printed in
// decimal and each digit mapped through rand.SafeEncodeString.
func Hash(data []byte, collisionCount *int32) string {
	h := fnvOffset32
	mix := func(b []byte) {
		for _, c := range b {
			h *= fnvPrime32
			h ^= uint32(c)
		}
	}
	mix(data)
	if collisionCount != nil {
		mix(strconv.AppendInt(nil, int64(*collisionCount), 10))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h), 10))
}

// Name returns the ControllerRevision name "<parent>-<hash>", cutting parent
// to 223 bytes so the name stays a valid object name.
func Name(parent, hash string) string {
	if len(parent) > maxPrefixLen {
		parent = parent[:maxPrefixLen]
	}
	return parent + "-" + hash
}

// ShortHash returns the part of a revision name after its last '-': the
// value CloneSet writes to controller-revision-hash under the
// CloneSetShortHash gate. A name without '-' is returned unchanged.
func ShortHash(name string) string {
	return name[strings.LastIndexByte(name, '-')+1:]
}

// HashMatches reports whether a controller-revision-hash label value names
// the revision revisionName: the full name, or its ShortHash (pods labelled
// under CloneSetShortHash). An empty label matches nothing.
func HashMatches(label, revisionName string) bool {
	return label != "" && (label == revisionName || label == ShortHash(revisionName))
}
