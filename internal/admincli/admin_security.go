package admincli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/config"
)

// --command-config FILE: the connection security of an admin command, in
// the Kafka client keys Kafka's own tools read from the same flag (and
// the librdkafka names for what is simpler there). Only PEM files: there
// is no JKS or PKCS12 reader here. Errors name the key, never a value: a
// value may be a password.

// clientSecurity is what a command-config file says about a connection.
type clientSecurity struct {
	Protocol  string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	Mechanism string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; "" without SASL
	User      string
	Password  string
	TLS       *tls.Config // nil without TLS
}

// commandConfigKeys are the keys a command-config file may hold.
var commandConfigKeys = map[string]bool{
	"security.protocol":                     true,
	"sasl.mechanism":                        true,
	"sasl.jaas.config":                      true,
	"sasl.username":                         true,
	"sasl.password":                         true,
	"ssl.truststore.location":               true,
	"ssl.truststore.type":                   true,
	"ssl.ca.location":                       true,
	"ssl.keystore.location":                 true,
	"ssl.keystore.type":                     true,
	"ssl.certificate.location":              true,
	"ssl.key.location":                      true,
	"ssl.endpoint.identification.algorithm": true,
}

// loadCommandConfig reads path and returns the client options it asks for.
func loadCommandConfig(path string) ([]kgo.Opt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	sec, err := parseCommandConfig(string(data), os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return sec.opts(), nil
}

// opts turns the security into franz-go client options.
func (s *clientSecurity) opts() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS))
	}
	switch s.Mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
	}
	return opts
}

// parseCommandConfig parses the text of a command-config file; readFile
// reads the PEM files it names.
func parseCommandConfig(text string, readFile func(string) ([]byte, error)) (*clientSecurity, error) {
	props, err := parseProperties(text)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for k := range props {
		if !commandConfigKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if !looksLikeKey(unknown[0]) {
			// A line without a separator is all key: it may be a
			// password that lost its "sasl.password=".
			return nil, errors.New("a line is not a key=value of a known key (not shown: it may hold a secret)")
		}
		return nil, fmt.Errorf("unknown key %q (known: security.protocol, sasl.*, ssl.* as in kbroker admin --help)", unknown[0])
	}
	s := &clientSecurity{Protocol: "PLAINTEXT"}
	if p, ok := props["security.protocol"]; ok {
		s.Protocol = strings.ToUpper(p)
	}
	var useTLS, useSASL bool
	switch s.Protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol: %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.Protocol)
	}

	if useSASL {
		if err := s.parseSASL(props); err != nil {
			return nil, err
		}
	} else {
		for _, k := range []string{"sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password"} {
			if _, ok := props[k]; ok {
				return nil, fmt.Errorf("%s is set but security.protocol is %s (want SASL_PLAINTEXT or SASL_SSL)", k, s.Protocol)
			}
		}
	}
	if useTLS {
		cfg, err := parseTLS(props, readFile)
		if err != nil {
			return nil, err
		}
		s.TLS = cfg
	} else {
		for k := range props {
			if strings.HasPrefix(k, "ssl.") {
				return nil, fmt.Errorf("%s is set but security.protocol is %s (want SSL or SASL_SSL)", k, s.Protocol)
			}
		}
	}
	return s, nil
}

func (s *clientSecurity) parseSASL(props map[string]string) error {
	mech, ok := props["sasl.mechanism"]
	if !ok {
		return errors.New("sasl.mechanism is required with SASL (GSSAPI, Kafka's default, is not supported): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	s.Mechanism = strings.ToUpper(mech)
	switch s.Mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("sasl.mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	jaas, hasJAAS := props["sasl.jaas.config"]
	user, hasUser := props["sasl.username"]
	pass, hasPass := props["sasl.password"]
	switch {
	case hasJAAS && (hasUser || hasPass):
		return errors.New("sasl.jaas.config and sasl.username/sasl.password both given: use one")
	case hasJAAS:
		u, p, err := parseJAAS(jaas, s.Mechanism)
		if err != nil {
			return err
		}
		s.User, s.Password = u, p
	case hasUser && hasPass:
		s.User, s.Password = user, pass
	default:
		return errors.New("SASL needs sasl.jaas.config, or sasl.username and sasl.password")
	}
	if s.User == "" {
		return errors.New("SASL user name is empty")
	}
	return nil
}

// parseJAAS reads the user and password of a PlainLoginModule or
// ScramLoginModule entry:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
//
// Its errors never quote the value.
func parseJAAS(v, mechanism string) (user, pass string, err error) {
	toks, err := jaasTokens(v)
	if err != nil {
		return "", "", err
	}
	if len(toks) < 2 || toks[len(toks)-1] != ";" {
		return "", "", errors.New("sasl.jaas.config: want `LoginModule required key=\"value\"...;`")
	}
	toks = toks[:len(toks)-1]
	module := toks[0]
	want := "ScramLoginModule"
	if mechanism == "PLAIN" {
		want = "PlainLoginModule"
	}
	if !strings.HasSuffix(module, "."+want) && module != want {
		return "", "", fmt.Errorf("sasl.jaas.config: sasl.mechanism %s needs %s, not another login module", mechanism, want)
	}
	switch strings.ToLower(toks[1]) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", "", errors.New("sasl.jaas.config: the login module must be followed by its control flag (required)")
	}
	opts := map[string]string{}
	for i := 2; i < len(toks); i++ {
		k, val, ok := strings.Cut(toks[i], "=")
		if !ok {
			return "", "", fmt.Errorf("sasl.jaas.config: option #%d is not key=value", i-1)
		}
		opts[k] = val
	}
	user, okU := opts["username"]
	pass, okP := opts["password"]
	if !okU || !okP {
		return "", "", errors.New("sasl.jaas.config: username and password are required")
	}
	return user, pass, nil
}

// jaasTokens splits a JAAS entry into words, key=value options (quotes
// removed, backslash escapes resolved inside quotes) and a final ";".
func jaasTokens(v string) ([]string, error) {
	var toks []string
	var cur strings.Builder
	inTok := false
	flush := func() {
		if inTok {
			toks = append(toks, cur.String())
			cur.Reset()
			inTok = false
		}
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inTok = true
			i++
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				cur.WriteByte(v[i])
			}
			if i >= len(v) {
				return nil, errors.New("sasl.jaas.config: unterminated quoted value")
			}
		case c == ';':
			flush()
			toks = append(toks, ";")
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
		default:
			inTok = true
			cur.WriteByte(c)
		}
	}
	flush()
	return toks, nil
}

func parseTLS(props map[string]string, readFile func(string) ([]byte, error)) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t, ok := props[k]; ok && !strings.EqualFold(t, "PEM") {
			return nil, fmt.Errorf("%s: only PEM is supported, not %q", k, t)
		}
	}
	ts, hasTS := props["ssl.truststore.location"]
	ca, hasCA := props["ssl.ca.location"]
	if hasTS && hasCA {
		return nil, errors.New("ssl.truststore.location and ssl.ca.location both given: use one")
	}
	caKey := "ssl.truststore.location"
	if hasCA {
		ts, caKey = ca, "ssl.ca.location"
	}
	if hasTS || hasCA {
		data, err := readFile(ts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caKey, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", caKey, ts)
		}
		cfg.RootCAs = pool
	}

	ks, hasKS := props["ssl.keystore.location"]
	certFile, hasCert := props["ssl.certificate.location"]
	keyFile, hasKey := props["ssl.key.location"]
	switch {
	case hasKS && (hasCert || hasKey):
		return nil, errors.New("ssl.keystore.location and ssl.certificate.location/ssl.key.location both given: use one")
	case hasKS:
		data, err := readFile(ks)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		cert, err := tls.X509KeyPair(data, data)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %s: want a PEM private key and certificate chain: %w", ks, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case hasCert != hasKey:
		return nil, errors.New("ssl.certificate.location and ssl.key.location go together")
	case hasCert:
		certPEM, err := readFile(certFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location: %w", err)
		}
		keyPEM, err := readFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.key.location: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location/ssl.key.location: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}

	alg, ok := props["ssl.endpoint.identification.algorithm"]
	switch {
	case !ok || strings.EqualFold(alg, "https"):
	case alg == "":
		// Kafka's empty algorithm: the chain is still verified against
		// the trust store, only the host name is not.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm: %q is not https or empty", alg)
	}
	return cfg, nil
}

// parseProperties reads a Java properties file (config.ParseProperties).
// A duplicate key is an error (Java keeps the last one silently, which
// hides mistakes in a file holding credentials).
func parseProperties(text string) (map[string]string, error) {
	list, err := config.ParseProperties([]byte(text))
	if err != nil {
		return nil, err
	}
	props := make(map[string]string, len(list))
	for _, p := range list {
		if _, dup := props[p.Key]; dup {
			return nil, fmt.Errorf("line %d: key %q given twice", p.Line, p.Key)
		}
		props[p.Key] = p.Value
	}
	return props, nil
}

// looksLikeKey: lower-case words joined by dots, as every Kafka key.
func looksLikeKey(k string) bool {
	if !strings.Contains(k, ".") {
		return false
	}
	for _, c := range k {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
