package admincli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/security/sasl"
)

// TestAdminAclsAndUsers: over a SASL_SSL listener with the
// StandardAuthorizer, the super user (from --command-config) creates a
// SCRAM user, who may not read a topic until `acls create` grants READ,
// and may not again after `acls delete`; `users describe` and `users
// delete` show and remove the credential.
func TestAdminAclsAndUsers(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, filepath.Join(dir, "tls"), "kb1", "admin")
	ca := filepath.Join(dir, "tls", "ca.pem")
	const adminPass, alicePass = "admin-Secret-1", "alice-Secret-2"
	user, cred, err := sasl.ParseAddScram("SCRAM-SHA-512=[name=admin,password=" + adminPass + "]")
	if err != nil {
		t.Fatal(err)
	}
	addr := startInProcessBrokerWith(t, "SECURE", []string{
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL",
		"inter.broker.listener.name=PLAINTEXT",
		// kb1's certificate does not name 127.0.0.1: the clients below
		// check the chain but not the host name.
		"ssl.keystore.location=" + filepath.Join(dir, "tls", "kb1.pem"),
		"ssl.truststore.location=" + ca,
		"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"super.users=User:admin",
	}, cluster.WithBootstrapScram(cluster.BootstrapScram{User: user, Credential: cred}))

	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adminCfg := write("admin.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="`+adminPass+`";`+
		"\nssl.truststore.type=PEM\nssl.truststore.location="+ca+"\nssl.endpoint.identification.algorithm=\n")
	aliceCfg := write("alice.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=alice\nsasl.password="+alicePass+"\nssl.ca.location="+ca+"\nssl.endpoint.identification.algorithm=\n")
	pwFile := write("alice.pw", alicePass+"\n")
	as := func(cfg string, args ...string) []string {
		n := 1
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			n = 2
		}
		return append(append(append([]string(nil), args[:n]...), "--command-config", cfg), args[n:]...)
	}
	sudo := func(args ...string) string { return mustAdmin(t, addr, as(adminCfg, args...)...) }

	// Without --command-config the TLS listener does not answer.
	if _, _, code := runAdmin(t, addr, "topics", "list", "--timeout", "2s"); code != 1 {
		t.Fatalf("topics list without security: exit %d, want 1", code)
	}
	// With the host name checked, kb1's certificate is refused for 127.0.0.1.
	checked := write("checked.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\nsasl.password="+adminPass+"\nssl.ca.location="+ca+"\n")
	if _, errOut, code := runAdmin(t, addr, as(checked, "topics", "list", "--timeout", "2s")...); code != 1 || !strings.Contains(errOut, "certificate") {
		t.Fatalf("topics list checking the host name: exit %d, %s", code, errOut)
	}
	sudo("topics", "create", "--topic", "secret", "--partitions", "1", "--replication-factor", "1")
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(ca)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: roots, ServerName: "kb1"}), kgo.RequestRetries(2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	root := client(kgo.SASL(kscram.Auth{User: "admin", Pass: adminPass}.AsSha512Mechanism()))
	if err := root.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("classified")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// users alter from a file; describe shows the mechanism and iterations.
	out := sudo("users", "alter", "--user", "alice", "--mechanism", "SCRAM-SHA-256", "--iterations", "4096", "--password-file", pwFile)
	if !strings.Contains(out, "alice") || !strings.Contains(out, "OK") || strings.Contains(out, alicePass) {
		t.Fatalf("users alter:\n%s", out)
	}
	var users []struct {
		User        string     `json:"user"`
		Credentials []userCred `json:"credentials"`
	}
	mustJSON(t, sudo("users", "describe", "--user", "alice", "--output", "json"), &users)
	if len(users) != 1 || users[0].User != "alice" || len(users[0].Credentials) != 1 ||
		users[0].Credentials[0] != (userCred{"SCRAM-SHA-256", 4096}) {
		t.Fatalf("users describe: %+v", users)
	}
	if out := sudo("users", "describe"); !strings.Contains(out, "alice") || !strings.Contains(out, "admin") || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Fatalf("users describe, all:\n%s", out)
	}

	alice := kadm.NewClient(client(kgo.SASL(kscram.Auth{User: "alice", Pass: alicePass}.AsSha256Mechanism())))
	topicErr := func() error {
		topics, err := alice.ListTopics(ctx, "secret")
		if err != nil {
			return err
		}
		return topics["secret"].Err
	}
	if err := topicErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice describes secret before the grant: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Alice may not manage ACLs: her own --command-config authenticates,
	// the authorizer refuses.
	if _, errOut, code := runAdmin(t, addr, as(aliceCfg, "acls", "list")...); code != 1 || !strings.Contains(errOut, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice lists ACLs: exit %d, %s", code, errOut)
	}

	out = sudo("acls", "create", "--principal", "User:alice", "--operation", "Read", "--allow", "--topic", "secret")
	if !strings.Contains(out, "User:alice") || !strings.Contains(out, "READ") || !strings.Contains(out, "OK") {
		t.Fatalf("acls create:\n%s", out)
	}
	testutil.Eventually(t, 10*time.Second, topicErr, "alice describes secret after the grant")
	consumer := client(kgo.SASL(kscram.Auth{User: "alice", Pass: alicePass}.AsSha256Mechanism()),
		kgo.ConsumeTopics("secret"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollFetches(ctx)
	if errs := fetches.Errors(); len(errs) > 0 {
		t.Fatalf("alice consumes: %v", errs[0].Err)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "classified" {
		t.Fatalf("alice read %d records", len(recs))
	}

	var acls []aclRow
	mustJSON(t, sudo("acls", "list", "--topic", "secret", "--output", "json"), &acls)
	want := aclRow{Principal: "User:alice", Host: "*", Permission: "ALLOW", Operation: "READ", ResourceType: "TOPIC", Resource: "secret", PatternType: "LITERAL"}
	if len(acls) != 1 || acls[0] != want {
		t.Fatalf("acls list: %+v, want [%+v]", acls, want)
	}
	sudo("acls", "create", "--principal", "User:bob", "--operation", "Write", "--deny", "--host", "10.0.0.1", "--group", "g", "--resource-pattern-type", "prefixed")
	if out := sudo("acls", "list", "--principal", "User:bob"); strings.Contains(out, "alice") || !strings.Contains(out, "PREFIXED") {
		t.Fatalf("acls list for bob:\n%s", out)
	}
	if out := sudo("acls", "list", "--group", "g-1", "--resource-pattern-type", "match"); !strings.Contains(out, "User:bob") {
		t.Fatalf("acls list matching group g-1:\n%s", out)
	}
	if out := sudo("acls", "list", "--group", "g-1"); strings.Contains(out, "User:bob") {
		t.Fatalf("acls list of the literal group g-1:\n%s", out)
	}
	if _, _, code := runAdmin(t, addr, as(adminCfg, "acls", "delete", "--principal", "User:alice")...); code != 2 {
		t.Fatalf("acls delete without a resource: exit %d, want 2", code)
	}
	mustJSON(t, sudo("acls", "delete", "--principal", "User:alice", "--topic", "secret", "--output", "json"), &acls)
	if len(acls) != 1 || acls[0] != want {
		t.Fatalf("acls delete: %+v, want [%+v]", acls, want)
	}
	if out := sudo("acls", "list"); strings.Contains(out, "alice") {
		t.Fatalf("acls list after delete:\n%s", out)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		switch err := topicErr(); {
		case err == nil:
			return errors.New("alice may still describe secret")
		case !errors.Is(err, kerr.TopicAuthorizationFailed):
			return fmt.Errorf("alice describes secret: %w", err)
		}
		return nil
	}, "alice denied again after acls delete")

	out = sudo("users", "delete", "--user", "alice", "--mechanism", "SCRAM-SHA-256")
	if !strings.Contains(out, "deleted") || !strings.Contains(out, "OK") {
		t.Fatalf("users delete:\n%s", out)
	}
	if _, errOut, code := runAdmin(t, addr, as(adminCfg, "users", "describe", "--user", "alice")...); code != 1 || !strings.Contains(errOut, "RESOURCE_NOT_FOUND") {
		t.Fatalf("users describe after delete: exit %d, %s", code, errOut)
	}
}

// Flag mistakes are usage errors (exit 2) before anything is sent; no
// password is ever taken from a flag.
func TestAdminAclsUsersUsage(t *testing.T) {
	for _, args := range [][]string{
		{"acls", "create", "--principal", "User:a", "--operation", "Read", "--topic", "t"},                      // no --allow/--deny
		{"acls", "create", "--principal", "User:a", "--operation", "Read", "--allow"},                           // no resource
		{"acls", "create", "--principal", "alice", "--operation", "Read", "--allow", "--topic", "t"},            // principal without type
		{"acls", "create", "--principal", "User:a", "--operation", "Any", "--allow", "--topic", "t"},            // ANY is a filter
		{"acls", "create", "--principal", "User:a", "--operation", "Read", "--allow", "--deny", "--topic", "t"}, // both
		{"acls", "create", "--principal", "User:a", "--operation", "Read", "--allow", "--topic", "t", "--resource-pattern-type", "match"},
		{"acls", "list", "--resource-pattern-type", "glob"},
		{"acls", "delete", "--principal", "User:a"},
		{"users", "alter", "--user", "a", "--mechanism", "SCRAM-SHA-256"},                       // no password file
		{"users", "alter", "--user", "a", "--mechanism", "SCRAM-SHA-1", "--password-file", "-"}, // mechanism
		{"users", "alter", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password", "x"},    // no such flag
		{"users", "alter", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--iterations", "100", "--password-file", "-"},
		{"users", "delete", "--user", "a"},
	} {
		// An address nothing listens on: a usage error must not get
		// that far.
		if _, errOut, code := runAdmin(t, "127.0.0.1:1", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	cfg := filepath.Join(t.TempDir(), "c.properties")
	if err := os.WriteFile(cfg, []byte("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=hunter2\nssl.keystore.password=hunter3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runAdmin(t, "127.0.0.1:1", "topics", "list", "--command-config", cfg)
	if code != 2 || !strings.Contains(errOut, "ssl.keystore.password") || strings.Contains(errOut, "hunter") {
		t.Fatalf("bad --command-config: exit %d, %s", code, errOut)
	}
}

func TestReadPassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	for _, tc := range []struct {
		name, content, want string
		stdin               bool
	}{
		{name: "file, first line", content: "p a s s\r\nignored\n", want: "p a s s"},
		{name: "file, no newline", content: "pw", want: "pw"},
		{name: "file, empty", content: "\n"},
		{name: "stdin", content: "from-stdin\n", want: "from-stdin", stdin: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := file
			if tc.stdin {
				old := stdin
				stdin = strings.NewReader(tc.content)
				t.Cleanup(func() { stdin = old })
				path = "-"
			} else if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readPassword(path)
			if tc.want == "" {
				var ue usageError
				if !errors.As(err, &ue) {
					t.Fatalf("got %q, %v; want a usage error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
