package itest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/testutil"
)

const (
	scramAdminPass = "admin-secret"
	scramAlicePass = "alice-secret"
	// scramPrefix is the topic and group name prefix alice's ACLs cover.
	scramPrefix = "alice-"
)

// scramBroker is a single node whose clients connect over SASL_SSL with
// SCRAM-SHA-512, with the StandardAuthorizer on and nothing allowed without
// an ACL; admin (a super user) is created by --add-scram at the quorum's
// first start. The PLAINTEXT listener is only the harness's readiness
// probe: its ANONYMOUS principal has no ACLs.
type scramBroker struct {
	*broker
	pki    *pki
	secure string // SASL_SSL host:port
}

func startScramBroker(t *testing.T, extra ...string) *scramBroker {
	t.Helper()
	p := newPKI(t, "scram itest CA")
	keystore, _ := p.issue("kb1")
	ports := testutil.Released(t, 3)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[1])
	secure := fmt.Sprintf("127.0.0.1:%d", ports[2])
	b := newBroker(t, 1, t.TempDir(), addr, ctrl, "1@"+ctrl,
		"listeners=PLAINTEXT://"+addr+",CONTROLLER://"+ctrl+",SECURE://"+secure,
		"advertised.listeners=PLAINTEXT://"+addr+",SECURE://"+secure,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL",
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.location="+keystore,
		"ssl.truststore.location="+p.caFile(),
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"super.users=User:admin",
		"offsets.topic.replication.factor=1",
		"group.initial.rebalance.delay.ms=0",
	)
	for _, e := range extra {
		b.args = append(b.args, "--set", e)
	}
	b.args = append(b.args, "--add-scram", "SCRAM-SHA-512=[name=admin,password="+scramAdminPass+"]")
	b.start()
	return &scramBroker{broker: b, pki: p, secure: secure}
}

// opts are franz-go options for user over the SASL_SSL listener.
func (s *scramBroker) opts(user, pass string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(s.secure),
		kgo.DialTLSConfig(&tls.Config{RootCAs: s.pki.pool()}),
		kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()),
	}
}

// client is a franz-go client as user, closed at the end of the test.
func (s *scramBroker) client(t *testing.T, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(s.opts(user, pass), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin is a kadm client as the super user.
func (s *scramBroker) admin(t *testing.T) *kadm.Client {
	return kadm.NewClient(s.client(t, "admin", scramAdminPass))
}

// createTopics creates each topic (2 partitions) as admin and waits until
// every partition has a leader.
func (s *scramBroker) createTopics(t *testing.T, topics ...string) {
	t.Helper()
	adm := s.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resps, err := adm.CreateTopics(ctx, 2, 1, nil, topics...)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("CreateTopics %s: %v (%s)", r.Topic, r.Err, r.ErrMessage)
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return err
		}
		for _, topic := range topics {
			td := md.Topics[topic]
			if td.Err != nil || len(td.Partitions) != 2 {
				return fmt.Errorf("topic %s not ready: %+v", topic, td)
			}
			for _, p := range td.Partitions {
				if p.Leader < 0 {
					return fmt.Errorf("topic %s partition %d has no leader", topic, p.Partition)
				}
			}
		}
		return nil
	}, "topics %v ready", topics)
}

// grantAlice creates, as admin, alice's ACLs (WRITE, READ, DESCRIBE on
// topics prefixed alice-, READ on groups prefixed alice-) and then the
// SCRAM-SHA-512 user alice. It returns when the broker has acknowledged
// the credential.
func (s *scramBroker) grantAlice(t *testing.T) {
	t.Helper()
	adm := s.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(scramPrefix).
			ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:alice").AllowHosts().Groups(scramPrefix).
			ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs %s %s %v: %v (%s)", r.Type, r.Name, r.Operation, r.Err, r.ErrMessage)
			}
		}
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: scramAlicePass,
	}})
	if err != nil {
		t.Fatalf("AlterUserSCRAMs: %v", err)
	}
	if err := altered.Error(); err != nil {
		t.Fatalf("AlterUserSCRAMs alice: %v", err)
	}
}

// aliceRoundTrip produces n records to topic as alice, consumes the topic
// from the start with the group until it has them all, commits, and checks
// that the group committed the topic's end offsets.
func (s *scramBroker) aliceRoundTrip(t *testing.T, topic, group string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := s.client(t, "alice", scramAlicePass)
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", group, i)}).FirstErr(); err != nil {
			t.Fatalf("alice produce %d to %s: %v", i, topic, err)
		}
	}
	cons := s.client(t, "alice", scramAlicePass, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("alice consumed %d of %d from %s: %v", len(seen), n, topic, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("alice fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), group+"-") {
				seen[string(r.Value)] = true
			}
		})
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commit in group %s: %v", group, err)
	}
	ends, err := s.admin(t).ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListEndOffsets %s: %v %v", topic, err, ends.Error())
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	s.waitCommitted(t, group, topic, total)
}

// waitCommitted polls, as admin, until group's committed offsets on topic
// add up to total.
func (s *scramBroker) waitCommitted(t *testing.T, group, topic string, total int64) {
	t.Helper()
	adm := s.admin(t)
	testutil.Eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				sum += o.At
			}
		})
		if sum != total {
			return fmt.Errorf("group %s committed %d of %d records of %s", group, sum, total, topic)
		}
		return nil
	}, "group %s committing %s", group, topic)
}

// checkAliceConfined checks what alice may not do: produce, list offsets
// or see topics outside her prefix, or use groups outside it.
func (s *scramBroker) checkAliceConfined(t *testing.T, allowed, denied string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := s.client(t, "alice", scramAlicePass, kgo.RecordRetries(2))
	adm := kadm.NewClient(cl)

	err := cl.ProduceSync(ctx, &kgo.Record{Topic: denied, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to %s: %v, want TOPIC_AUTHORIZATION_FAILED", denied, err)
	}

	ends, err := adm.ListEndOffsets(ctx, denied)
	if err == nil {
		err = ends.Error()
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("ListEndOffsets %s: %v, want TOPIC_AUTHORIZATION_FAILED", denied, err)
	}

	// Metadata for every topic lists only alice's; asked by name, the
	// other topic is refused rather than reported missing.
	all, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	names := all.Topics.Names()
	if !slices.Contains(names, allowed) || slices.Contains(names, denied) {
		t.Errorf("alice's Metadata lists %v, want %s and not %s", names, allowed, denied)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, scramPrefix) {
			t.Errorf("alice's Metadata lists %s, outside her prefix", name)
		}
	}
	mreq := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(denied)
	mreq.Topics = append(mreq.Topics, rt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata %s: %v", denied, err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Metadata %s: %+v, want TOPIC_AUTHORIZATION_FAILED", denied, mresp.Topics)
	}

	// Groups outside the prefix: committing and fetching offsets.
	outside := "bob-group"
	offs := kadm.Offsets{}
	offs.AddOffset(allowed, 0, 1, -1)
	committed, err := adm.CommitOffsets(ctx, outside, offs)
	if err == nil {
		err = committed.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("commit in group %s: %v, want GROUP_AUTHORIZATION_FAILED", outside, err)
	}
	fetched, err := adm.FetchOffsets(ctx, outside)
	if err == nil {
		err = fetched.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("fetch offsets of group %s: %v, want GROUP_AUTHORIZATION_FAILED", outside, err)
	}
}

// metadataAs sends one Metadata request as user/pass without retries.
func (s *scramBroker) metadataAs(user, pass string) error {
	cl, err := kgo.NewClient(append(s.opts(user, pass), kgo.RequestRetries(0), kgo.DialTimeout(3*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// franz-go as admin creates topics, alice's ACLs and alice herself; alice
// then works inside her prefix at once and is refused outside it.
func TestScramACLFranz(t *testing.T) {
	s := startScramBroker(t)
	allowed, denied := scramPrefix+"orders", "secret-orders"
	s.createTopics(t, allowed, denied)

	// Before she exists, alice cannot authenticate.
	if err := s.metadataAs("alice", scramAlicePass); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("alice before creation: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	s.grantAlice(t)
	// The credential is in the image the SASL authenticator reads as soon
	// as AlterUserScramCredentials has answered; allow a second for it.
	if err := testutil.Poll(context.Background(), time.Second, func() error {
		return s.metadataAs("alice", scramAlicePass)
	}); err != nil {
		t.Fatalf("alice could not authenticate within a second of her creation: %v", err)
	}

	t.Run("inside prefix", func(t *testing.T) { s.aliceRoundTrip(t, allowed, scramPrefix+"group", 20) })
	t.Run("outside prefix", func(t *testing.T) { s.checkAliceConfined(t, allowed, denied) })
	t.Run("wrong password", func(t *testing.T) {
		for _, tc := range []struct{ user, pass string }{
			{"alice", "not-" + scramAlicePass},
			{"admin", scramAlicePass},
			{"mallory", scramAlicePass},
		} {
			if err := s.metadataAs(tc.user, tc.pass); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", tc.user, err)
			}
		}
	})
	t.Run("mechanism not enabled", func(t *testing.T) {
		// The listener enables SCRAM-SHA-512 only; alice has no SHA-256
		// credential either.
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.secure), kgo.DialTLSConfig(&tls.Config{RootCAs: s.pki.pool()}),
			kgo.SASL(kscram.Auth{User: "alice", Pass: scramAlicePass}.AsSha256Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
			t.Errorf("SCRAM-SHA-256 on a SCRAM-SHA-512 listener: %v, want UNSUPPORTED_SASL_MECHANISM", err)
		}
	})
	t.Run("no escalation", func(t *testing.T) { s.checkAliceNotAdmin(t, allowed) })
	t.Run("password change and deletion", func(t *testing.T) { s.checkCredentialChanges(t) })
	t.Run("ACL deletion", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		deleted, err := s.admin(t).DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().
			Topics(scramPrefix).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
		if err != nil {
			t.Fatalf("DeleteACLs: %v", err)
		}
		n := 0
		for _, r := range deleted {
			if r.Err != nil {
				t.Fatalf("DeleteACLs: %v (%s)", r.Err, r.ErrMessage)
			}
			n += len(r.Deleted)
		}
		if n != 1 {
			t.Fatalf("DeleteACLs deleted %d ACLs, want alice's WRITE", n)
		}
		// Alice still authenticates and reads, but may no longer write:
		// an idempotent producer is refused its producer id (WRITE on no
		// topic means no IDEMPOTENT_WRITE), a plain one its Produce.
		idem := s.client(t, "alice", "alice-secret-2", kgo.RecordRetries(2))
		err = idem.ProduceSync(ctx, &kgo.Record{Topic: allowed, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("idempotent produce to %s without WRITE: %v, want CLUSTER_AUTHORIZATION_FAILED", allowed, err)
		}
		cl := s.client(t, "alice", "alice-secret-2", kgo.RecordRetries(2), kgo.DisableIdempotentWrite())
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: allowed, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("produce to %s without WRITE: %v, want TOPIC_AUTHORIZATION_FAILED", allowed, err)
		}
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, allowed)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			t.Errorf("ListEndOffsets %s with READ: %v", allowed, err)
		}
	})
}

// checkAliceNotAdmin checks that alice cannot create topics (she has no
// CREATE), grant herself ACLs, or read or change SCRAM credentials.
func (s *scramBroker) checkAliceNotAdmin(t *testing.T, allowed string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.client(t, "alice", scramAlicePass))

	created, err := adm.CreateTopic(ctx, 1, 1, nil, scramPrefix+"new")
	if err == nil {
		err = created.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice creates a topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	acls, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("secret-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
	if err == nil {
		for _, r := range acls {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice creates ACLs: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: "admin", Mechanism: kadm.ScramSha512, Password: "taken-over",
	}})
	if err == nil {
		err = altered.Error()
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice changes admin's password: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := adm.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice describes SCRAM users: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if err := s.metadataAs("admin", scramAdminPass); err != nil {
		t.Errorf("admin after alice's attempts: %v", err)
	}
}

// checkCredentialChanges changes alice's password and deletes and
// recreates her credential: each change holds for the next
// authentication.
func (s *scramBroker) checkCredentialChanges(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := s.admin(t)
	alter := func(del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, del, up)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("AlterUserSCRAMs: %v", err)
		}
	}
	expect := func(pass string, want error) {
		t.Helper()
		err := s.metadataAs("alice", pass)
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("alice with password %q: %v, want %v", pass, err, want)
		}
	}
	alter(nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret-2"}})
	expect(scramAlicePass, kerr.SaslAuthenticationFailed)
	expect("alice-secret-2", nil)

	alter([]kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	expect("alice-secret-2", kerr.SaslAuthenticationFailed)
	users, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil {
		t.Fatalf("DescribeUserSCRAMs: %v", err)
	}
	if err := users["alice"].Err; !errors.Is(err, kerr.ResourceNotFound) {
		t.Errorf("DescribeUserSCRAMs alice after deletion: %+v, want RESOURCE_NOT_FOUND", users["alice"])
	}

	alter(nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Password: "alice-secret-2"}})
	expect("alice-secret-2", nil)
}

// ACLs and SCRAM users are metadata records: after a SIGKILL and a start
// on the same log dir alice authenticates and is confined as before.
func TestScramACLSurviveRestart(t *testing.T) {
	s := startScramBroker(t)
	allowed, denied := scramPrefix+"restart", "secret-restart"
	s.createTopics(t, allowed, denied)
	s.grantAlice(t)
	s.aliceRoundTrip(t, allowed, scramPrefix+"before", 10)

	s.kill9()
	s.start()

	adm := s.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("DescribeUserSCRAMs: %v", err)
	}
	for _, u := range []string{"admin", "alice"} {
		d, ok := users[u]
		if !ok || d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha512 {
			t.Errorf("after restart, SCRAM user %s: %+v (present %v)", u, d, ok)
		}
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().
		AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatalf("DescribeACLs: %v", err)
	}
	var acls []string
	for _, r := range described {
		if r.Err != nil {
			t.Fatalf("DescribeACLs: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			acls = append(acls, fmt.Sprintf("%s:%s:%s:%s", d.Type, d.Pattern, d.Name, d.Operation))
		}
	}
	if len(acls) != 4 {
		t.Errorf("after restart, alice's ACLs: %v, want 4 (WRITE, READ, DESCRIBE on topics, READ on groups)", acls)
	}

	if err := s.metadataAs("alice", "not-"+scramAlicePass); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("alice with a wrong password after restart: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	s.aliceRoundTrip(t, allowed, scramPrefix+"after", 20)
	s.checkAliceConfined(t, allowed, denied)
}

// With connections.max.reauth.ms a SASL session ends unless the client
// re-authenticates (KIP-368): franz-go re-authenticates with SCRAM on its
// connections while alice produces across several sessions.
func TestScramReauthentication(t *testing.T) {
	const session = 1500 * time.Millisecond
	s := startScramBroker(t, fmt.Sprintf("listener.name.secure.connections.max.reauth.ms=%d", session.Milliseconds()))
	topic := scramPrefix + "reauth"
	s.createTopics(t, topic)
	s.grantAlice(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := &reauthLog{}
	cl := s.client(t, "alice", scramAlicePass, kgo.WithLogger(log), kgo.RecordRetries(1))
	deadline := time.Now().Add(3 * session)
	n := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r-%d", n)}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets after re-authentications: %v", err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(n) {
		t.Fatalf("end offsets add up to %d, want the %d records produced", total, n)
	}
	if log.reauths.Load() == 0 || log.failed.Load() != 0 {
		t.Fatalf("franz-go re-authenticated %d times, %d failed; want some and none failed",
			log.reauths.Load(), log.failed.Load())
	}
	t.Logf("%d records over %v with %v sessions; %d re-authentications", n, 3*session, session, log.reauths.Load())
}

// reauthLog counts franz-go's KIP-368 re-authentications from its debug
// log messages.
type reauthLog struct{ reauths, failed atomic.Int64 }

func (*reauthLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *reauthLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	switch {
	case strings.Contains(msg, "reauth failed"):
		l.failed.Add(1)
	case strings.Contains(msg, "expiry limit reached, reauthenticating"):
		l.reauths.Add(1)
	}
}
