package security

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// TLSOptions tune a TLSStore; the zero value is fine.
type TLSOptions struct {
	Logger *slog.Logger
	// ReloadInterval is how often Run checks the keystore and truststore
	// files for changes; default 5s.
	ReloadInterval time.Duration
	// Now is the clock for validity checks; default time.Now.
	Now func() time.Time
}

// TLSStore holds a listener's TLS key material and hands out tls.Configs
// that always use the newest of it: Run reloads changed files, and every
// new handshake picks up the result, while established connections keep
// theirs.
type TLSStore struct {
	settings TLSSettings
	opts     TLSOptions
	cur      atomic.Pointer[tlsMaterial]
	reloads  atomic.Int64
}

// tlsMaterial is one consistent load of the keystore and truststore.
type tlsMaterial struct {
	cert  *tls.Certificate // nil without a keystore
	roots *x509.CertPool   // nil means the system roots
	files map[string]fileState
	// server is the config handed to each new server handshake.
	server *tls.Config
}

// fileState identifies a file's content cheaply (size, mtime) and surely
// (hash); the hash is only computed when size or mtime moved.
type fileState struct {
	size    int64
	mtime   time.Time
	sum     [32]byte
	missing bool
}

// NewTLSStore parses the ssl.* keys of a listener view and loads the
// stores. It fails, naming the key or file, on an unreadable or malformed
// store, a wrong key password, or an expired or not yet valid certificate.
func NewTLSStore(view map[string]string, opts TLSOptions) (*TLSStore, error) {
	settings, err := ParseTLSSettings(view)
	if err != nil {
		return nil, err
	}
	return NewTLSStoreFromSettings(settings, opts)
}

// NewTLSStoreFromSettings is NewTLSStore for already parsed settings.
func NewTLSStoreFromSettings(settings TLSSettings, opts TLSOptions) (*TLSStore, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReloadInterval <= 0 {
		opts.ReloadInterval = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &TLSStore{settings: settings, opts: opts}
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	return s, nil
}

// Settings returns the parsed ssl.* settings.
func (s *TLSStore) Settings() TLSSettings { return s.settings }

// Certificate returns the current keystore certificate (nil without one).
func (s *TLSStore) Certificate() *tls.Certificate { return s.cur.Load().cert }

// Reloads counts successful reloads since start.
func (s *TLSStore) Reloads() int64 { return s.reloads.Load() }

// readFile reads path and records its state.
func readFile(path string, files map[string]fileState, key string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", key, path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", key, path, err)
	}
	files[path] = fileState{size: fi.Size(), mtime: fi.ModTime(), sum: sha256.Sum256(data)}
	return data, nil
}

func (s *TLSStore) load() (*tlsMaterial, error) {
	st := s.settings
	m := &tlsMaterial{files: map[string]fileState{}}
	switch {
	case st.KeystoreLocation != "":
		src := fmt.Sprintf("ssl.keystore.location %q", st.KeystoreLocation)
		data, err := readFile(st.KeystoreLocation, m.files, "ssl.keystore.location")
		if err != nil {
			return nil, err
		}
		if m.cert, err = keyPair(data, data, st.KeyPassword, src, src, s.opts.Now()); err != nil {
			return nil, err
		}
	case st.KeystoreKey != "":
		var err error
		if m.cert, err = keyPair([]byte(st.KeystoreKey), []byte(st.KeystoreChain), st.KeyPassword,
			"ssl.keystore.key", "ssl.keystore.certificate.chain", s.opts.Now()); err != nil {
			return nil, err
		}
	}
	var trust []byte
	trustSrc := "ssl.truststore.certificates"
	switch {
	case st.TruststoreLocation != "":
		var err error
		trustSrc = fmt.Sprintf("ssl.truststore.location %q", st.TruststoreLocation)
		if trust, err = readFile(st.TruststoreLocation, m.files, "ssl.truststore.location"); err != nil {
			return nil, err
		}
	case st.TruststoreCertificates != "":
		trust = []byte(st.TruststoreCertificates)
	}
	if trust != nil {
		certs, err := parseCertificates(trust, trustSrc)
		if err != nil {
			return nil, err
		}
		m.roots = x509.NewCertPool()
		for _, c := range certs {
			m.roots.AddCert(c)
		}
	} else if st.ClientAuth != tls.NoClientCert {
		pool, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("ssl.client.auth needs a truststore and the system roots are unavailable: %w", err)
		}
		m.roots = pool
	}
	if m.cert != nil {
		m.server = &tls.Config{
			Certificates: []tls.Certificate{*m.cert},
			ClientAuth:   st.ClientAuth,
			ClientCAs:    m.roots,
			MinVersion:   st.MinVersion,
			MaxVersion:   st.MaxVersion,
			CipherSuites: st.CipherSuites,
		}
	}
	return m, nil
}

func keyPair(keyPEM, chainPEM []byte, password, keySrc, chainSrc string, now time.Time) (*tls.Certificate, error) {
	key, err := parsePrivateKey(keyPEM, password, keySrc)
	if err != nil {
		return nil, err
	}
	chain, err := parseCertificates(chainPEM, chainSrc)
	if err != nil {
		return nil, err
	}
	return buildCertificate(key, chain, now, chainSrc)
}

// ErrNoKeystore is returned by ServerConfig for a listener without
// ssl.keystore.location or ssl.keystore.key.
var ErrNoKeystore = errors.New("an SSL listener needs ssl.keystore.location or ssl.keystore.key and ssl.keystore.certificate.chain")

// ServerConfig returns the tls.Config for an SSL or SASL_SSL listener
// (tls.NewListener or tls.Server). Each handshake takes the key material
// current at that moment.
func (s *TLSStore) ServerConfig() (*tls.Config, error) {
	if s.cur.Load().server == nil {
		return nil, ErrNoKeystore
	}
	st := s.settings
	return &tls.Config{
		MinVersion: st.MinVersion,
		MaxVersion: st.MaxVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load().server, nil
		},
	}, nil
}

// ClientConfig returns a tls.Config to dial serverName (host name or IP
// of the peer broker, without port) for inter-broker traffic. It presents
// the keystore certificate when the peer asks for one and verifies the
// peer against the truststore; with ssl.endpoint.identification.algorithm
// empty the peer's host name is not checked, only its chain.
func (s *TLSStore) ClientConfig(serverName string) *tls.Config {
	m := s.cur.Load()
	st := s.settings
	cfg := &tls.Config{
		ServerName:   serverName,
		RootCAs:      m.roots,
		MinVersion:   st.MinVersion,
		MaxVersion:   st.MaxVersion,
		CipherSuites: st.CipherSuites,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := s.cur.Load().cert; c != nil {
				return c, nil
			}
			return &tls.Certificate{}, nil // no certificate to offer
		},
	}
	if !st.VerifyHostname {
		// Go has no "verify the chain but not the name" switch: skip its
		// check and verify the chain ourselves.
		roots := m.roots
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			return err
		}
	}
	return cfg
}
