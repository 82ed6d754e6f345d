//go:build race || kbroker_poison

package wire

// Race-detector and kbroker_poison builds poison released buffers
// (bufpool.go), so a use after release corrupts records visibly.
func init() { poisonForced = true }
