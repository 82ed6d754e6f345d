package config

import (
	"errors"
	"strings"
)

// Validate checks each key's range and the rules between keys. It returns
// every problem found, joined; each is an *Error naming the key.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for i := range keys {
		if keys[i].check != nil {
			add(keys[i].check(c))
		}
	}

	errs = append(errs, c.checkLogKeys()...)
	add(checkRemoteStorage(c))
	if len(c.LogDirs) == 0 {
		add(invalid("log.dirs", "must name at least one directory"))
	}
	if c.MetadataLogDir == "" {
		add(invalid("metadata.log.dir", "must not be empty"))
	}
	if c.MessageMaxBytes > c.SocketRequestMaxBytes {
		add(invalid("message.max.bytes", "%d is larger than socket.request.max.bytes %d", c.MessageMaxBytes, c.SocketRequestMaxBytes))
	}

	// Listeners: every name has a protocol, names are unique.
	names := map[string]bool{}
	for _, l := range c.Listeners {
		if names[l.Name] {
			add(invalid("listeners", "listener name %s appears twice", l.Name))
		}
		names[l.Name] = true
		if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
			add(invalid("listener.security.protocol.map", "has no entry for listener %s", l.Name))
		}
		if l.Port < 0 || l.Port > 65535 {
			add(invalid("listeners", "%s: port out of range", l))
		}
	}
	add(c.validateSecurity(names))
	advertised := map[string]bool{}
	for _, l := range c.AdvertisedListeners {
		switch {
		case advertised[l.Name]:
			add(invalid("advertised.listeners", "listener name %s appears twice", l.Name))
		case !names[l.Name]:
			add(invalid("advertised.listeners", "%s is not in listeners", l.Name))
		case c.isControllerListener(l.Name):
			add(invalid("advertised.listeners", "%s is a controller listener; controller listeners are not advertised", l.Name))
		case l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::":
			add(invalid("advertised.listeners", "%s: advertising a wildcard address is not allowed", l))
		}
		advertised[l.Name] = true
	}
	if len(c.ControllerListenerNames) == 0 {
		add(invalid("controller.listener.names", "must name at least one listener"))
	}
	if len(c.ControllerQuorumVoters) == 0 {
		add(invalid("controller.quorum.voters", "must name at least one voter"))
	}
	voters := map[int32]bool{}
	for _, v := range c.ControllerQuorumVoters {
		if voters[v.ID] {
			add(invalid("controller.quorum.voters", "voter id %d appears twice", v.ID))
		}
		voters[v.ID] = true
	}

	if c.IsController() {
		if _, ok := c.ControllerListener(); !ok {
			add(invalid("controller.listener.names", "the controller role needs a listener named %s in listeners", strings.Join(c.ControllerListenerNames, " or ")))
		}
		// A controller not among the voters is allowed: it follows the
		// metadata log as an observer (a raft non-voter) until an
		// operator adds it to the quorum (AddRaftVoter, KIP-853), and
		// controller.quorum.voters names the quorum it reaches at start.
	}
	if c.IsBroker() {
		hasBrokerListener := false
		for _, l := range c.Listeners {
			if !c.isControllerListener(l.Name) {
				hasBrokerListener = true
			}
		}
		if !hasBrokerListener {
			add(invalid("listeners", "the broker role needs a listener that is not a controller listener"))
		}
		switch {
		case c.InterBrokerListenerName == "":
			add(invalid("inter.broker.listener.name", "must be set for the broker role"))
		case !names[c.InterBrokerListenerName]:
			add(invalid("inter.broker.listener.name", "%s is not in listeners", c.InterBrokerListenerName))
		case c.isControllerListener(c.InterBrokerListenerName):
			add(invalid("inter.broker.listener.name", "%s is a controller listener", c.InterBrokerListenerName))
		case !advertised[c.InterBrokerListenerName]:
			add(invalid("inter.broker.listener.name", "%s is not in advertised.listeners", c.InterBrokerListenerName))
		}
	} else if c.IsController() {
		// As Kafka: a controller-only node listens only on controller
		// listeners.
		for _, l := range c.Listeners {
			if !c.isControllerListener(l.Name) {
				add(invalid("listeners", "%s is not a controller listener, but process.roles has no broker", l.Name))
			}
		}
	}
	// Unlike Kafka, every node listens on its controller listener: the
	// Raft metadata log reaches broker-only nodes there (as Raft
	// non-voters), and the controller RPCs share it.
	if _, ok := c.ControllerListener(); !ok {
		add(invalid("listeners", "a listener named in controller.listener.names is needed (the metadata log's Raft transport)"))
	}
	return errors.Join(errs...)
}
