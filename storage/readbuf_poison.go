//go:build race || kbroker_poison

package storage

// Race-detector and kbroker_poison builds poison released read buffers
// (readbuf.go), so a use after Release corrupts records visibly.
func init() { poisonReleased = true }
