package kafkaapi

import "testing"

func TestAdvertisedControllerID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		active int32
		listed []int32
		want   int32
	}{
		{"active controller is a listed broker", 2, []int32{1, 2, 3}, 2},
		{"dedicated controller: lowest listed broker", 1, []int32{5, 4, 6}, 4},
		{"no active controller known", -1, []int32{3, 2}, 2},
		{"active controller fenced or on no listener", 3, []int32{1, 2}, 1},
		{"no broker listed", 1, nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := advertisedControllerID(tc.active, tc.listed); got != tc.want {
				t.Fatalf("advertisedControllerID(%d, %v) = %d, want %d", tc.active, tc.listed, got, tc.want)
			}
		})
	}
}
