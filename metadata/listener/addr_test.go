package listener

import "testing"

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // "" for nil
		wantErr bool
	}{
		{in: "kb1:9093", want: "kb1:9093"},
		{in: "127.0.0.1:9093", want: "127.0.0.1:9093"},
		{in: "[::1]:9093", want: "[::1]:9093"},
		{in: "kb1:0"},
		{in: "kb1", wantErr: true},
		{in: ":9093", wantErr: true},
		{in: "kb1:http", wantErr: true},
		{in: "kb1:70000", wantErr: true},
	} {
		a, err := ParseAddr(tc.in)
		switch {
		case tc.wantErr:
			if err == nil {
				t.Errorf("%q: got %v, want an error", tc.in, a)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.want == "" && a != nil:
			t.Errorf("%q: got %v, want nil", tc.in, a)
		case tc.want != "" && (a == nil || a.String() != tc.want):
			t.Errorf("%q: got %v, want %s", tc.in, a, tc.want)
		}
	}
}
