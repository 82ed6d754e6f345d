package server

import (
	"time"

	"github.com/kbroker/kbroker/security"
)

// ListenerSecurity is one client listener's security as connections use it.
type ListenerSecurity struct {
	Name string
	Sec  *security.ListenerSecurity
	// Reauth is the listener's connections.max.reauth.ms: the lifetime of
	// a SASL session (KIP-368); 0 is unbounded.
	Reauth time.Duration
}

func (l *ListenerSecurity) sasl() bool { return l != nil && l.Sec.SASL != nil }
