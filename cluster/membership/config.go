package membership

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// Sentinel errors.
var (
	// ErrInvalidConfig is wrapped by New when a Config field is bad; the
	// message names the field and the value.
	ErrInvalidConfig = errors.New("membership: invalid config")
	// ErrAlreadyRun is returned by a second call of Run.
	ErrAlreadyRun = errors.New("membership: Run called twice")
)

// DefaultJoinRetryInterval is how often Run retries the seeds until another
// node is reached, when Config.JoinRetryInterval is zero.
const DefaultJoinRetryInterval = 2 * time.Second

// leaveTimeout bounds how long Run waits for the leave broadcast to go out.
const leaveTimeout = 5 * time.Second

// Config configures one node's membership. Timing fields left zero take the
// values of memberlist.DefaultLANConfig; tests and small local clusters may
// set them smaller.
type Config struct {
	// NodeID is this broker's node id (>= 0). The memberlist node name is
	// "kbroker-<NodeID>".
	NodeID int32
	// BindAddr is gossip.listener, host:port; TCP and UDP. Port 0 picks a
	// free port (tests); an empty host means all interfaces.
	BindAddr string
	// AdvertiseAddr is the address other nodes use to reach this one,
	// host:port or host (then the bound port). Optional: memberlist picks
	// one from BindAddr when empty.
	AdvertiseAddr string
	// Seeds is gossip.seeds, host:port each. It may include this node's own
	// address. Unreachable seeds are retried; nodes may start in any order.
	Seeds []string
	// Logger receives memberlist's log lines and this package's. Optional.
	Logger *slog.Logger

	// Optional timing overrides (zero: LAN defaults).
	ProbeInterval  time.Duration
	ProbeTimeout   time.Duration
	GossipInterval time.Duration
	SuspicionMult  int
	// JoinRetryInterval is how often the seeds are retried until another
	// node is reached (zero: DefaultJoinRetryInterval).
	JoinRetryInterval time.Duration

	// KeyFile is gossip.secret.key.file: the keys that encrypt and
	// authenticate gossip (see keyring.go). Empty: gossip is plaintext and
	// unauthenticated.
	KeyFile string
	// KeyReloadInterval is how often KeyFile is re-read (zero:
	// DefaultKeyReloadInterval).
	KeyReloadInterval time.Duration
}

// nodeName is the memberlist node name of a kbroker node id.
func nodeName(id int32) string { return "kbroker-" + strconv.FormatInt(int64(id), 10) }

// validate checks the config and splits the addresses.
func (c *Config) validate() (bindHost string, bindPort int, advHost string, advPort int, err error) {
	bad := func(key string, val any, why string) error {
		return fmt.Errorf("%w: %s=%v: %s", ErrInvalidConfig, key, val, why)
	}
	if c.NodeID < 0 {
		return "", 0, "", 0, bad("NodeID", c.NodeID, "must be >= 0")
	}
	bindHost, bindPort, err = splitHostPort(c.BindAddr)
	if err != nil || bindPort < 0 {
		return "", 0, "", 0, bad("BindAddr", c.BindAddr, "want host:port")
	}
	if bindHost == "" {
		bindHost = "0.0.0.0"
	}
	if c.AdvertiseAddr != "" {
		advHost, advPort = c.AdvertiseAddr, 0
		if h, p, err := splitHostPort(c.AdvertiseAddr); err == nil {
			advHost, advPort = h, p
		}
		if advHost == "" || advPort < 0 {
			return "", 0, "", 0, bad("AdvertiseAddr", c.AdvertiseAddr, "want host:port or host")
		}
	}
	for _, s := range c.Seeds {
		if _, _, err := splitHostPort(s); err != nil {
			return "", 0, "", 0, bad("Seeds", s, "want host:port")
		}
	}
	for key, d := range map[string]time.Duration{
		"ProbeInterval": c.ProbeInterval, "ProbeTimeout": c.ProbeTimeout,
		"GossipInterval": c.GossipInterval, "JoinRetryInterval": c.JoinRetryInterval,
	} {
		if d < 0 {
			return "", 0, "", 0, bad(key, d, "must be >= 0")
		}
	}
	if c.KeyReloadInterval < 0 {
		return "", 0, "", 0, bad("KeyReloadInterval", c.KeyReloadInterval, "must be >= 0")
	}
	if c.SuspicionMult < 0 {
		return "", 0, "", 0, bad("SuspicionMult", c.SuspicionMult, "must be >= 0")
	}
	return bindHost, bindPort, advHost, advPort, nil
}

func splitHostPort(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, err
	}
	return h, int(port), nil
}
