package server

import (
	"testing"
	"time"
)

// A SASL session ends after connections.max.reauth.ms, and no later than
// a delegation token's expiry even without it (Kafka's
// SaslServerAuthenticator).
func TestSessionExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name       string
		reauth     time.Duration
		credential time.Time
		want       time.Time
	}{
		{"unbounded", 0, time.Time{}, time.Time{}},
		{"reauth only", time.Minute, time.Time{}, now.Add(time.Minute)},
		{"token only", 0, now.Add(time.Hour), now.Add(time.Hour)},
		{"token before reauth", time.Hour, now.Add(time.Minute), now.Add(time.Minute)},
		{"reauth before token", time.Minute, now.Add(time.Hour), now.Add(time.Minute)},
	} {
		if got := sessionExpiry(now, tc.reauth, tc.credential); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
