package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestReservedOrdinals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []intstr.IntOrString
		want    []int
		wantErr string
	}{
		{name: "none", want: []int{}},
		{name: "ints", in: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(4)}, want: []int{1, 4}},
		{name: "range and int string", in: []intstr.IntOrString{intstr.FromString("3-5"), intstr.FromString("8")}, want: []int{3, 4, 5, 8}},
		{name: "single-element range", in: []intstr.IntOrString{intstr.FromString("2-2")}, want: []int{2}},
		{name: "reversed range", in: []intstr.IntOrString{intstr.FromString("5-3")}, wantErr: "spec.reserveOrdinals[0]"},
		{name: "garbage", in: []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("a-b")}, wantErr: "spec.reserveOrdinals[1]"},
		{name: "negative", in: []intstr.IntOrString{intstr.FromInt32(-1)}, wantErr: "negative"},
		{name: "huge range", in: []intstr.IntOrString{intstr.FromString("0-999999999")}, wantErr: "spans more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := reservedOrdinals(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, sets.List(got))
		})
	}
}

func TestSlotOrdinals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		start    int
		reserved []int
		want     []int
	}{
		{name: "plain", replicas: 3, want: []int{0, 1, 2}},
		{name: "zero", replicas: 0, want: []int{}},
		{name: "reserved ordinals are skipped, replicas still counted", replicas: 3, reserved: []int{1}, want: []int{0, 2, 3}},
		{name: "reserved beyond the replicas change nothing", replicas: 2, reserved: []int{5}, want: []int{0, 1}},
		{name: "start ordinal", replicas: 3, start: 5, want: []int{5, 6, 7}},
		{name: "start and reserved", replicas: 3, start: 5, reserved: []int{5, 7}, want: []int{6, 8, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, slotOrdinals(tc.replicas, tc.start, sets.New(tc.reserved...)))
		})
	}
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
