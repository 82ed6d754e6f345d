package security

import (
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/security/sasl"
)

// ControllerSASL reads the SASL settings of a SASL_PLAINTEXT or SASL_SSL
// controller listener from its view (ListenerProps): the server that
// verifies the other nodes, and this node's own client sessions
// (sasl.mechanism.controller.protocol with the username and password of
// that mechanism's sasl.jaas.config, as in Kafka).
//
// sasl.enabled.mechanisms defaults to the controller mechanism. PLAIN
// users are the PlainLoginModule's user_<name> options. SCRAM users come
// from the same JAAS entries (username/password and user_<name>), not
// from the metadata log as on client listeners: raft must authenticate
// its peers before that log exists or is readable, which is why Kafka
// cannot use SCRAM between controllers at all.
func ControllerSASL(view map[string]string) (*sasl.Server, func() sasl.ClientSession, error) {
	client, err := clientSASL(view, "sasl.mechanism.controller.protocol")
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(view["sasl.enabled.mechanisms"]) == "" {
		view["sasl.enabled.mechanisms"] = client().Mechanism()
	}
	scram := sasl.ScramCredentials{}
	for _, m := range splitList(view["sasl.enabled.mechanisms"]) {
		sm, ok := sasl.ScramMechanismByName(strings.ToUpper(m))
		if !ok {
			continue
		}
		jaas, ok := MechanismProp(view, sm.Name(), "sasl.jaas.config")
		if !ok {
			return nil, nil, fmt.Errorf("%s is enabled but no %s.sasl.jaas.config is set", sm.Name(), strings.ToLower(sm.Name()))
		}
		entries, err := sasl.ParseJAAS(jaas)
		if err != nil {
			return nil, nil, fmt.Errorf("%s.sasl.jaas.config: %w", strings.ToLower(sm.Name()), err)
		}
		users := map[string]string{}
		for k, v := range entries[0].Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
				users[name] = v
			}
		}
		if u, p := entries[0].Options["username"], entries[0].Options["password"]; u != "" && p != "" {
			users[u] = p
		}
		for u, p := range users {
			cred, err := sasl.DeriveScramCredential(sm, p, nil, controllerScramIterations)
			if err != nil {
				return nil, nil, fmt.Errorf("%s credential of %s: %w", sm.Name(), u, err)
			}
			scram.Add(u, cred)
		}
	}
	server, err := NewSASLServer(view, scram)
	if err != nil {
		return nil, nil, err
	}
	return server, client, nil
}

// controllerScramIterations is Kafka's minimum (4096): the credentials
// never leave memory, so more rounds would only slow every connection.
const controllerScramIterations = 4096
