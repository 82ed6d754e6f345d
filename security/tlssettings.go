package security

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// TLSSettings are the ssl.* properties of one listener, checked.
type TLSSettings struct {
	// Keystore: a PEM file holding the private key and certificate chain,
	// or both given inline.
	KeystoreLocation string
	KeystoreKey      string
	KeystoreChain    string
	KeyPassword      string

	// Truststore: a PEM file of CA certificates or the certificates
	// inline; neither means the system roots (Java's cacerts in Kafka).
	TruststoreLocation     string
	TruststoreCertificates string

	ClientAuth             tls.ClientAuthType
	MinVersion, MaxVersion uint16
	// CipherSuites for TLS 1.2; nil means Go's defaults. TLS 1.3 suites
	// are accepted by name but Go always enables all of them.
	CipherSuites []uint16
	// VerifyHostname is ssl.endpoint.identification.algorithm=https (the
	// default): a client checks the server certificate names the host.
	VerifyHostname bool
}

// ParseTLSSettings reads the ssl.* keys of a listener view (see
// ListenerProps). Only PEM stores are supported: JKS and PKCS12 files
// need Java's keystore formats.
func ParseTLSSettings(view map[string]string) (TLSSettings, error) {
	var s TLSSettings
	for _, k := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		if t := prop(view, k); t != "" && !strings.EqualFold(t, "PEM") {
			return s, fmt.Errorf("%s=%s is not supported: kbroker reads PEM only (%s=PEM); %s", k, t, k, convertHint(k, t))
		}
	}
	s.KeystoreLocation = prop(view, "ssl.keystore.location")
	s.KeystoreKey = view["ssl.keystore.key"]
	s.KeystoreChain = view["ssl.keystore.certificate.chain"]
	s.KeyPassword = view["ssl.key.password"]
	if s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreChain != "") {
		return s, fmt.Errorf("ssl.keystore.location cannot be combined with ssl.keystore.key / ssl.keystore.certificate.chain")
	}
	if (s.KeystoreKey == "") != (s.KeystoreChain == "") {
		return s, fmt.Errorf("ssl.keystore.key and ssl.keystore.certificate.chain must be given together")
	}
	// Kafka refuses a store password for PEM: only the key is encrypted.
	if view["ssl.keystore.password"] != "" {
		return s, fmt.Errorf("ssl.keystore.password cannot be specified with PEM format, only ssl.key.password may be specified")
	}
	if view["ssl.truststore.password"] != "" {
		return s, fmt.Errorf("ssl.truststore.password cannot be specified with PEM format")
	}
	s.TruststoreLocation = prop(view, "ssl.truststore.location")
	s.TruststoreCertificates = view["ssl.truststore.certificates"]
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		return s, fmt.Errorf("ssl.truststore.location cannot be combined with ssl.truststore.certificates")
	}

	switch v := strings.ToLower(prop(view, "ssl.client.auth")); v {
	case "", "none":
		s.ClientAuth = tls.NoClientCert
	case "requested":
		s.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		s.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return s, fmt.Errorf("ssl.client.auth=%s: want none, requested or required", v)
	}

	protocols := splitList(prop(view, "ssl.enabled.protocols"))
	if len(protocols) == 0 {
		protocols = []string{"TLSv1.2", "TLSv1.3"} // Kafka's default
	}
	for _, p := range protocols {
		var v uint16
		switch p {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3", "SSLv2Hello":
			return s, fmt.Errorf("ssl.enabled.protocols: %s is insecure and not supported; use TLSv1.2 and/or TLSv1.3", p)
		default:
			return s, fmt.Errorf("ssl.enabled.protocols: unknown protocol %q (TLSv1.2, TLSv1.3)", p)
		}
		if s.MinVersion == 0 || v < s.MinVersion {
			s.MinVersion = v
		}
		if v > s.MaxVersion {
			s.MaxVersion = v
		}
	}
	if p := prop(view, "ssl.protocol"); p != "" && p != "TLS" && p != "TLSv1.2" && p != "TLSv1.3" {
		return s, fmt.Errorf("ssl.protocol=%s is not supported (TLS, TLSv1.2, TLSv1.3)", p)
	}

	if names := splitList(prop(view, "ssl.cipher.suites")); len(names) > 0 {
		suites, err := cipherSuites(names)
		if err != nil {
			return s, err
		}
		s.CipherSuites = suites
	}

	switch a := strings.ToLower(prop(view, "ssl.endpoint.identification.algorithm")); {
	case a == "https":
		s.VerifyHostname = true
	case a == "" && !hasKey(view, "ssl.endpoint.identification.algorithm"):
		s.VerifyHostname = true // Kafka's default since 2.0
	case a == "":
		s.VerifyHostname = false // explicitly emptied: chain checked, host name not
	default:
		return s, fmt.Errorf("ssl.endpoint.identification.algorithm=%s: want https or empty", a)
	}
	return s, nil
}

func hasKey(view map[string]string, k string) bool {
	_, ok := view[k]
	return ok
}

// tls13Suites are the TLS 1.3 names Java accepts; Go enables them all.
var tls13Suites = map[string]bool{
	"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true,
}

// cipherSuites maps Kafka (JSSE, i.e. IANA) suite names to Go's IDs.
// Suites Go classes as insecure are refused rather than quietly enabled.
func cipherSuites(names []string) ([]uint16, error) {
	known := map[string]uint16{}
	for _, c := range tls.CipherSuites() {
		known[c.Name] = c.ID
	}
	insecure := map[string]bool{}
	for _, c := range tls.InsecureCipherSuites() {
		insecure[c.Name] = true
	}
	out := []uint16{}
	for _, n := range names {
		switch {
		case tls13Suites[n]:
		case insecure[n]:
			return nil, fmt.Errorf("ssl.cipher.suites: %s is insecure and not supported", n)
		default:
			id, ok := known[n]
			if !ok {
				return nil, fmt.Errorf("ssl.cipher.suites: unknown cipher suite %q", n)
			}
			out = append(out, id)
		}
	}
	return out, nil
}

// convertHint says how to turn a Java store into the PEM file kbroker
// reads (docs/SECURITY.md has the full recipe).
func convertHint(key, typ string) string {
	jks := ""
	if strings.EqualFold(typ, "JKS") {
		jks = "keytool -importkeystore -srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12, then "
	}
	if key == "ssl.truststore.type" {
		return "convert with keytool -exportcert -rfc -keystore store." + strings.ToLower(typ) + " -alias <ca> > ca.pem and set ssl.truststore.location=ca.pem"
	}
	return "convert with " + jks + "openssl pkcs12 -in store.p12 -nodes -nocerts -out key.pem; openssl pkcs12 -in store.p12 -nokeys >> key.pem, and set ssl.keystore.location=key.pem"
}
