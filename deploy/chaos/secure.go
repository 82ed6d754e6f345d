package main

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// The --security modes of the subprocess target.
const (
	secPlaintext = "plaintext"
	secSASLSSL   = "sasl_ssl"
)

// The harness's users: admin is every client of the harness, kb the
// brokers to each other. Both are super users, so the authorizer (deny
// when no ACL matches) lets them do everything and nobody else anything.
const (
	adminUser  = "admin"
	brokerUser = "kb"
	brokerCN   = "kb%d" // node certificates, the controller's mTLS principals
)

// procSecurity is the key material of a SASL_SSL cluster, generated into
// the work directory: a CA and node certificates (kbroker tls init), the
// SCRAM-SHA-512 passwords of admin and kb, and the gossip key.
type procSecurity struct {
	dir       string // work/tls
	scramFile string // --add-scram-file of every node
	gossipKey string
	brokerPw  string
	tls       *tls.Config // trusts the CA
	opts      []kgo.Opt   // TLS + SCRAM as admin, for every client
}

// newProcSecurity writes the key material with the broker binary itself
// (the CA and certificates as an operator would make them).
func newProcSecurity(bin, work string) (*procSecurity, error) {
	s := &procSecurity{dir: filepath.Join(work, "tls")}
	hosts := make([]string, 3)
	for i := range hosts {
		hosts[i] = fmt.Sprintf(brokerCN, i+1)
	}
	out, err := exec.Command(bin, "tls", "init", "--dir", s.dir, "--hosts", strings.Join(hosts, ","),
		"--san-localhost", "--client", "").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("kbroker tls init: %w\n%s", err, out)
	}
	adminPw, err := secret(16)
	if err != nil {
		return nil, err
	}
	if s.brokerPw, err = secret(16); err != nil {
		return nil, err
	}
	// Passwords stay off the command lines: the SCRAM bootstrap and the
	// JAAS entry (nodeProps) are in 0600 files.
	s.scramFile = filepath.Join(work, "scram")
	creds := fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]\nSCRAM-SHA-512=[name=%s,password=%s]\n",
		adminUser, adminPw, brokerUser, s.brokerPw)
	if err := os.WriteFile(s.scramFile, []byte(creds), 0o600); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s.gossipKey = filepath.Join(work, "gossip.key")
	if err := os.WriteFile(s.gossipKey, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(s.dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", filepath.Join(s.dir, "ca.pem"))
	}
	s.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	s.opts = []kgo.Opt{
		kgo.DialTLSConfig(s.tls),
		kgo.SASL(kscram.Auth{User: adminUser, Pass: adminPw}.AsSha512Mechanism()),
	}
	return s, nil
}

func secret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// nodeProps writes node id's server.properties (0600: it holds the JAAS
// password) and returns its path. Clients use EXTERNAL (SASL_SSL,
// SCRAM-SHA-512), brokers replicate over INTERNAL (SASL_SSL as kb), and
// the controller listener is SSL with client certificates (mutual TLS,
// principals User:CN=kbN).
func (s *procSecurity) nodeProps(work string, id int, client, internal, ctrl string) (string, error) {
	var supers []string
	for i := range 3 {
		supers = append(supers, "User:CN="+fmt.Sprintf(brokerCN, i+1))
	}
	supers = append(supers, "User:"+adminUser, "User:"+brokerUser)
	props := []string{
		"listeners=EXTERNAL://" + client + ",INTERNAL://" + internal + ",CONTROLLER://" + ctrl,
		"advertised.listeners=EXTERNAL://" + client + ",INTERNAL://" + internal,
		"listener.security.protocol.map=EXTERNAL:SASL_SSL,INTERNAL:SASL_SSL,CONTROLLER:SSL",
		"inter.broker.listener.name=INTERNAL",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		fmt.Sprintf(`listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`,
			brokerUser, s.brokerPw),
		"ssl.keystore.location=" + filepath.Join(s.dir, fmt.Sprintf(brokerCN, id)+".pem"),
		"ssl.truststore.location=" + filepath.Join(s.dir, "ca.pem"),
		"super.users=" + strings.Join(supers, ";"),
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"gossip.secret.key.file=" + s.gossipKey,
	}
	path := filepath.Join(work, fmt.Sprintf("node-%d.properties", id))
	if err := os.WriteFile(path, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
		return "", err
	}
	return path, nil
}
