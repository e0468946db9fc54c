package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestReservedOrdinals(t *testing.T) {
	// widest is what the CRD allows at most: 1000 entries (maxItems)
	// reserving pub.MaxReservedOrdinals ordinals in all.
	var widest []intstr.IntOrString
	for i := range 1000 {
		widest = append(widest, intstr.FromString(fmt.Sprintf("%d-%d", i*1000, i*1000+99)))
	}
	for _, tc := range []struct {
		name    string
		in      []intstr.IntOrString
		want    reservation
		wantLen int // instead of want
		wantErr string
	}{
		{name: "none", want: reservation{}},
		{name: "ints", in: []intstr.IntOrString{intstr.FromInt32(4), intstr.FromInt32(1)}, want: reservation{{1, 1}, {4, 4}}},
		{name: "range and int string", in: []intstr.IntOrString{intstr.FromString("3-5"), intstr.FromString("8")}, want: reservation{{3, 5}, {8, 8}}},
		{name: "single-element range", in: []intstr.IntOrString{intstr.FromString("2-2")}, want: reservation{{2, 2}}},
		{name: "overlapping and adjacent merge", in: []intstr.IntOrString{intstr.FromString("3-5"), intstr.FromInt32(6), intstr.FromString("1-4"), intstr.FromInt32(9)}, want: reservation{{1, 6}, {9, 9}}},
		{name: "reversed range", in: []intstr.IntOrString{intstr.FromString("5-3")}, wantErr: "spec.reserveOrdinals[0]"},
		{name: "garbage", in: []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("a-b")}, wantErr: "spec.reserveOrdinals[1]"},
		{name: "negative", in: []intstr.IntOrString{intstr.FromInt32(-1)}, wantErr: "negative"},
		{name: "above int32", in: []intstr.IntOrString{intstr.FromString("0-9223372036854775807")}, wantErr: "spec.reserveOrdinals[0]"},
		{name: "huge range", in: []intstr.IntOrString{intstr.FromString("0-999999999")}, wantErr: "more than 100000 ordinals"},
		{name: "the widest the CRD allows", in: widest, wantLen: 1000},
		{name: "one more ordinal than the CRD allows", in: append(slices.Clone(widest), intstr.FromInt32(5000000)), wantErr: "more than 100000 ordinals"},
		// What the CRD allowed before it bounded the total: 1000 ranges of
		// 100,000 ordinals, 10^8 in all (a set of them took gigabytes).
		{name: "1000 ranges of 100000", in: func() (in []intstr.IntOrString) {
			for i := range 1000 {
				in = append(in, intstr.FromString(fmt.Sprintf("%d-%d", i*100000, i*100000+99999)))
			}
			return in
		}(), wantErr: "more than 100000 ordinals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := reservedOrdinals(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.wantLen > 0 {
				assert.Len(t, got, tc.wantLen)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReservationHas(t *testing.T) {
	r := reservation{{1, 3}, {7, 7}, {10, 20}}
	var got []int
	for o := range 25 {
		if r.has(o) {
			got = append(got, o)
		}
	}
	assert.Equal(t, []int{1, 2, 3, 7, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, got)
	assert.False(t, reservation(nil).has(0))
}

func TestSlotOrdinals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		start    int
		reserved reservation
		want     []int
	}{
		{name: "plain", replicas: 3, want: []int{0, 1, 2}},
		{name: "zero", replicas: 0, want: []int{}},
		{name: "reserved ordinals are skipped, replicas still counted", replicas: 3, reserved: reservation{{1, 1}}, want: []int{0, 2, 3}},
		{name: "reserved beyond the replicas change nothing", replicas: 2, reserved: reservation{{5, 5}}, want: []int{0, 1}},
		{name: "start ordinal", replicas: 3, start: 5, want: []int{5, 6, 7}},
		{name: "start and reserved", replicas: 3, start: 5, reserved: reservation{{5, 5}, {7, 7}}, want: []int{6, 8, 9}},
		{name: "reserved below the start", replicas: 2, start: 5, reserved: reservation{{0, 3}, {6, 6}}, want: []int{5, 7}},
		{name: "start inside a reserved range", replicas: 2, start: 5, reserved: reservation{{4, 8}}, want: []int{9, 10}},
		{name: "a wide range is jumped", replicas: 3, reserved: reservation{{1, 99999}}, want: []int{0, 100000, 100001}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, slotOrdinals(tc.replicas, tc.start, tc.reserved))
		})
	}
}

func TestSlotIndex(t *testing.T) {
	slots := []int{0, 2, 3, 9}
	assert.Equal(t, 2, slotIndex(slots, 3))
	assert.Equal(t, -1, slotIndex(slots, 1))
	assert.True(t, isSlot(slots, 9))
	assert.False(t, isSlot(slots, 10))
}

func TestOrdinalOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want int
	}{
		{"web-0", true, 0},
		{"web-12", true, 12},
		{"web-012", false, 0},
		{"web-", false, 0},
		{"web-x", false, 0},
		{"web-1-2", false, 0},
		{"webx-1", false, 0},
		{"web--1", false, 0},
	} {
		got, ok := ordinalOf("web", tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	assert.Equal(t, "data-web-3", claimName("data", "web", 3))
}
