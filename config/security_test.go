package config

import (
	"errors"
	"strings"
	"testing"
)

func TestSecurityKeys(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
	env := []string{"KBROKER_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE_LOCATION=/env/kb1.pem"}
	c, err := Load("", env, []string{
		"listeners=INTERNAL://:9092,EXTERNAL://:9094,CONTROLLER://:9093",
		"listener.security.protocol.map=INTERNAL:SSL,EXTERNAL:SASL_SSL,CONTROLLER:SSL",
		"inter.broker.listener.name=INTERNAL",
		"ssl.truststore.location=/ca.pem",
		"ssl.endpoint.identification.algorithm=",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.external.plain.sasl.jaas.config=" + jaas,
		"listener.name.internal.ssl.client.auth=required",
		"super.users=User:CN=kb1;User:admin",
		"connections.max.reauth.ms=60000",
	})
	if err != nil {
		t.Fatal(err)
	}
	props := c.SecurityProps()
	want := map[string]string{
		"ssl.truststore.location":                       "/ca.pem",
		"ssl.endpoint.identification.algorithm":         "",
		"sasl.enabled.mechanisms":                       "PLAIN",
		"listener.name.external.plain.sasl.jaas.config": jaas,
		"listener.name.internal.ssl.client.auth":        "required",
		"listener.name.external.ssl.keystore.location":  "/env/kb1.pem",
	}
	for k, v := range want {
		if got, ok := props[k]; !ok || got != v {
			t.Errorf("SecurityProps()[%s] = %q, %v; want %q", k, got, ok, v)
		}
	}
	if _, ok := props["ssl.keystore.location"]; ok {
		t.Error("a key that was not given is in SecurityProps")
	}
	if len(c.SuperUsers) != 2 || c.SuperUsers[1] != "User:admin" {
		t.Errorf("SuperUsers = %v", c.SuperUsers)
	}
	if c.ConnectionsMaxReauthMs != 60000 || c.ListenerProtocol("external") != "SASL_SSL" {
		t.Errorf("reauth %d, protocol %s", c.ConnectionsMaxReauthMs, c.ListenerProtocol("external"))
	}

	// Secrets never leave through DescribeConfigs.
	seen := map[string]bool{}
	for _, e := range c.BrokerConfigEntries() {
		seen[e.Name] = true
		if strings.Contains(e.Value, "alice-secret") {
			t.Errorf("%s shows the secret", e.Name)
		}
		secret := strings.Contains(e.Name, "password") || strings.HasSuffix(e.Name, "sasl.jaas.config") ||
			e.Name == "ssl.keystore.key" || e.Name == "ssl.keystore.certificate.chain" || e.Name == "ssl.truststore.certificates" ||
			e.Name == "delegation.token.secret.key" ||
			e.Name == "rsm.config.storage.aws.secret.access.key"
		if secret != e.Sensitive {
			t.Errorf("%s: Sensitive = %v", e.Name, e.Sensitive)
		}
	}
	if !seen["listener.name.external.plain.sasl.jaas.config"] || !seen["ssl.truststore.location"] {
		t.Error("security keys missing from BrokerConfigEntries")
	}
}

func TestUnknownSecurityKeys(t *testing.T) {
	for _, k := range []string{
		"listener.name.plaintext.ssl.keystore.pass", // typo
		"listener.name.plaintext.gssapi.sasl.jaas.config",
		"listener.name.PLAINTEXT.ssl.client.auth", // Kafka lower-cases listener names
		"scram-sha-256.sasl.jaas.config",          // only with a listener prefix
	} {
		if _, err := Load("", nil, []string{k + "=x"}); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%s: err = %v, want ErrUnknownKey", k, err)
		}
	}
}

// A SASL controller listener needs a mechanism kbroker has, given
// globally or for the controller listener.
func TestControllerSASLMechanism(t *testing.T) {
	base := []string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"}
	for _, tc := range []struct {
		set  string
		want string // "" for success
	}{
		{"sasl.mechanism.controller.protocol=SCRAM-SHA-512", ""},
		{"listener.name.controller.sasl.mechanism.controller.protocol=plain", ""},
		{"sasl.mechanism.controller.protocol=GSSAPI", `sasl.mechanism.controller.protocol: "GSSAPI"`},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := Load("", nil, append(base, tc.set))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %s", err, tc.want)
			}
		})
	}
}

// The delegation token secret is a password: never shown by
// DescribeConfigs, whatever its value.
func TestDelegationTokenSecretHidden(t *testing.T) {
	c, err := Load("", nil, []string{"delegation.token.secret.key=token-secret-xyz"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DelegationTokenSecretKey != "token-secret-xyz" || c.DelegationTokenMaxLifetimeMs != 604800000 ||
		c.DelegationTokenExpiryTimeMs != 86400000 || c.DelegationTokenExpiryCheckIntervalMs != 3600000 {
		t.Fatalf("delegation token config %q %d %d %d", c.DelegationTokenSecretKey, c.DelegationTokenMaxLifetimeMs,
			c.DelegationTokenExpiryTimeMs, c.DelegationTokenExpiryCheckIntervalMs)
	}
	found := false
	for _, e := range c.BrokerConfigEntries() {
		if strings.Contains(e.Value, "token-secret-xyz") {
			t.Errorf("%s shows the secret", e.Name)
		}
		if e.Name == "delegation.token.secret.key" {
			found = true
			if !e.Sensitive {
				t.Error("delegation.token.secret.key is not sensitive")
			}
		}
	}
	if !found {
		t.Error("delegation.token.secret.key not in BrokerConfigEntries")
	}
}
