package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	loaded, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, loaded) {
		t.Fatalf("Load with no sources differs from Default:\n%+v\n%+v", loaded, c)
	}
	want := map[string]any{
		"NodeID":                        int32(1),
		"ProcessRoles":                  []string{"broker", "controller"},
		"Listeners":                     []Listener{{"PLAINTEXT", "localhost", 9092}, {"CONTROLLER", "localhost", 9093}},
		"AdvertisedListeners":           []Listener{{"PLAINTEXT", "localhost", 9092}},
		"ListenerSecurityProtocolMap":   map[string]string{"CONTROLLER": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT"},
		"ControllerListenerNames":       []string{"CONTROLLER"},
		"InterBrokerListenerName":       "PLAINTEXT",
		"ControllerQuorumVoters":        []Voter{{1, "localhost", 9093}},
		"LogDirs":                       []string{"./data"},
		"MetadataLogDir":                filepath.Join("data", "__cluster_metadata"),
		"NumPartitions":                 int32(1),
		"DefaultReplicationFactor":      int16(1),
		"AutoCreateTopicsEnable":        true,
		"MessageMaxBytes":               int32(1048588),
		"SocketRequestMaxBytes":         int32(104857600),
		"MaxRequestPartitionSizeLimit":  int32(2000),
		"LogCleanupPolicy":              "delete",
		"LogSegmentBytes":               int64(1073741824),
		"LogRollMs":                     int64(168 * 3600 * 1000),
		"LogRetentionMs":                int64(168 * 3600 * 1000),
		"LogRetentionBytes":             int64(-1),
		"LogIndexIntervalBytes":         int32(4096),
		"LogIndexSizeMaxBytes":          int32(10485760),
		"LogFlushIntervalMessages":      int64(math.MaxInt64),
		"LogFlushIntervalMs":            int64(-1),
		"MinInsyncReplicas":             int32(1),
		"CompressionType":               "producer",
		"LogMessageTimestampType":       "CreateTime",
		"UncleanLeaderElectionEnable":   false,
		"ReplicaLagTimeMaxMs":           int64(30000),
		"OffsetsTopicReplicationFactor": int16(3),
		"OffsetsTopicNumPartitions":     int32(50),
		"GroupInitialRebalanceDelayMs":  int32(3000),
		"BrokerRack":                    "",
		"AdminListener":                 "",
	}
	v := reflect.ValueOf(c)
	for field, w := range want {
		if got := v.FieldByName(field).Interface(); !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", field, got, w)
		}
	}
	if !c.IsBroker() || !c.IsController() {
		t.Error("default node should be broker and controller")
	}
	if l, ok := c.ControllerListener(); !ok || l.Port != 9093 {
		t.Errorf("ControllerListener = %v, %v", l, ok)
	}
	if l, ok := c.Listener("plaintext"); !ok || l.Port != 9092 {
		t.Errorf("Listener(plaintext) = %v, %v", l, ok)
	}
	if _, ok := c.Listener("EXTERNAL"); ok {
		t.Error("Listener(EXTERNAL) found")
	}
}

// Every field's kafka tag is a key of the table, and every table key that
// maps to a field has a tag: one place defines each key.
func TestEveryFieldHasAKey(t *testing.T) {
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		tag := typ.Field(i).Tag.Get("kafka")
		if tag == "-" || !typ.Field(i).IsExported() {
			continue
		}
		if tag == "" {
			t.Errorf("field %s has no kafka tag", typ.Field(i).Name)
			continue
		}
		if _, ok := keyIndex[tag]; !ok {
			t.Errorf("field %s: key %q is not in the table", typ.Field(i).Name, tag)
		}
	}
}

func TestKeys(t *testing.T) {
	ks := Keys()
	if !sort.SliceIsSorted(ks, func(i, j int) bool {
		return ks[i].Name < ks[j].Name || ks[i].Name == ks[j].Name && ks[i].Scope < ks[j].Scope
	}) {
		t.Error("Keys not sorted")
	}
	if len(ks) != len(keys)+len(topicKeys) {
		t.Errorf("Keys has %d entries, want %d", len(ks), len(keys)+len(topicKeys))
	}
	for _, k := range ks {
		if k.Doc == "" || (k.Scope != "broker" && k.Scope != "topic") {
			t.Errorf("bad KeyDoc %+v", k)
		}
	}
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, `
# comment
! another comment
node.id=7
controller.quorum.voters=7@localhost:9093
num.partitions : 3
default.replication.factor 2
broker.rack=r1
`)
	env := []string{
		"PATH=/bin",
		"KBROKER_NUM_PARTITIONS=4",
		"KBROKER_BROKER_RACK=r2",
		"OTHER_NODE_ID=99",
	}
	sets := []string{"broker.rack=r3", "broker.rack = r4"}
	c, err := Load(file, env, sets)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 7 {
		t.Errorf("node.id = %d, want 7 (file)", c.NodeID)
	}
	if c.DefaultReplicationFactor != 2 {
		t.Errorf("default.replication.factor = %d, want 2 (file, space separator)", c.DefaultReplicationFactor)
	}
	if c.NumPartitions != 4 {
		t.Errorf("num.partitions = %d, want 4 (env over file)", c.NumPartitions)
	}
	if c.BrokerRack != "r4" {
		t.Errorf("broker.rack = %q, want r4 (last --set)", c.BrokerRack)
	}
}

func TestUnknownKey(t *testing.T) {
	file := writeFile(t, "node.id=1\n\nlog.dirz=/x\n")
	cases := []struct {
		name      string
		file      string
		env, sets []string
		want      string
	}{
		{"file", file, nil, nil, `config: unknown key "log.dirz" (` + file + `:3)`},
		{"env", "", []string{"KBROKER_LOG_DIRZ=/x"}, nil, `config: unknown key "log.dirz" (env KBROKER_LOG_DIRZ)`},
		{"set", "", nil, []string{"log.dirz=/x"}, `config: unknown key "log.dirz" (--set)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.file, tc.env, tc.sets)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			if !errors.Is(err, ErrUnknownKey) {
				t.Errorf("err does not wrap ErrUnknownKey")
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != "log.dirz" {
				t.Errorf("err is not an *Error for log.dirz: %#v", err)
			}
		})
	}
	if _, err := Load("", nil, []string{"novalue"}); err == nil || !strings.Contains(err.Error(), "key=value") {
		t.Errorf("--set without '=': err = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing"), nil, nil); err == nil {
		t.Error("missing file: no error")
	}
}

func TestBadValues(t *testing.T) {
	cases := []struct {
		set  string
		want string // substring of the error
	}{
		{"num.partitions=abc", `config: num.partitions: "abc" is not an integer (--set)`},
		{"num.partitions=99999999999", `num.partitions: "99999999999" is out of range for a 32-bit integer`},
		{"default.replication.factor=40000", `out of range for a 16-bit integer`},
		{"log.segment.bytes=99999999999999999999", `log.segment.bytes: "99999999999999999999" is out of range`},
		{"node.id=-1", `node.id: -1 is less than the minimum 0`},
		{"num.partitions=0", `num.partitions: 0 is less than the minimum 1`},
		{"log.segment.bytes=100", `log.segment.bytes: 100 is less than the minimum 1024`},
		{"auto.create.topics.enable=yes", `auto.create.topics.enable: "yes" is not a boolean`},
		{"listeners=PLAINTEXT:9092", `listeners: "PLAINTEXT:9092" is not a listener NAME://host:port`},
		{"listeners=PLAINTEXT://host", `is not a listener`},
		{"listeners=PLAINTEXT://host:99999", `port "99999"`},
		{"listeners=PLAIN TEXT://h:1", `is not a listener`},
		{"listeners=A://h:1,A://h:2", `listener name A appears twice`},
		{"controller.quorum.voters=1-localhost:9093", `controller.quorum.voters: "1-localhost:9093" is not a voter id@host:port`},
		{"controller.quorum.voters=x@localhost:9093", `voter id "x"`},
		{"controller.quorum.voters=1@localhost", `is not a voter`},
		{"controller.quorum.voters=1@a:1,1@b:2", `voter id 1 appears twice`},
		{"compression.type=brotli", `compression.type: "brotli" is not one of producer, uncompressed, gzip, snappy, lz4, zstd`},
		{"log.message.timestamp.type=Now", `log.message.timestamp.type: "Now" is not one of`},
		{"process.roles=broker,worker", `process.roles: "worker" is not broker or controller`},
		{"process.roles=", `process.roles: must name at least one`},
		{"process.roles=broker,broker", `broker appears twice`},
		{"listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:SASL_SSL", `sasl.mechanism.controller.protocol: "": the controller listener CONTROLLER is SASL_SSL`},
		{"listener.name.external.ssl.keystore.location=/x.pem", `listener EXTERNAL is not in listeners`},
		{"super.users=admin", `super.users: "admin" is not Type:name`},
		{"listener.security.protocol.map=PLAINTEXT:FOO", `"FOO" is not a security protocol`},
		{"listener.security.protocol.map=PLAINTEXT", `is not NAME:PROTOCOL`},
		{"log.cleanup.policy=shred", `log.cleanup.policy: "shred" is not delete, compact`},
		{"gossip.listener=nope", `gossip.listener: "nope" is not host:port`},
		{"log.retention.hours=x", `log.retention.hours: "x" is not an integer`},
	}
	for _, tc := range cases {
		t.Run(tc.set, func(t *testing.T) {
			_, err := Load("", nil, []string{tc.set})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("err does not wrap ErrInvalid")
			}
		})
	}
	// The source of a bad value is named too.
	file := writeFile(t, "node.id=x\n")
	if _, err := Load(file, nil, nil); err == nil || err.Error() != `config: node.id: "x" is not an integer (`+file+`:1)` {
		t.Errorf("file: err = %v", err)
	}
	if _, err := Load("", []string{"KBROKER_NODE_ID=x"}, nil); err == nil || err.Error() != `config: node.id: "x" is not an integer (env KBROKER_NODE_ID)` {
		t.Errorf("env: err = %v", err)
	}
}

func TestGoodValues(t *testing.T) {
	c, err := Load("", nil, []string{
		"listeners=plaintext://:9092,CONTROLLER://[::1]:9093,EXTERNAL://0.0.0.0:19092",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,controller:plaintext,EXTERNAL:PLAINTEXT",
		"controller.quorum.voters=1@[::1]:9093, 2@b:9093 ,3@c:9093",
		"log.dirs=/a, /b",
		"auto.create.topics.enable=FALSE",
		"compression.type=zstd",
		"log.cleanup.policy=delete,compact",
		"gossip.seeds=a:7946,b:7946",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantL := []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "::1", 9093}, {"EXTERNAL", "0.0.0.0", 19092}}
	if !reflect.DeepEqual(c.Listeners, wantL) {
		t.Errorf("listeners = %v", c.Listeners)
	}
	wantA := []Listener{{"PLAINTEXT", "localhost", 9092}, {"EXTERNAL", "localhost", 19092}}
	if !reflect.DeepEqual(c.AdvertisedListeners, wantA) {
		t.Errorf("advertised.listeners = %v", c.AdvertisedListeners)
	}
	if got := c.Listeners[1].String(); got != "CONTROLLER://[::1]:9093" {
		t.Errorf("String = %s", got)
	}
	wantV := []Voter{{1, "::1", 9093}, {2, "b", 9093}, {3, "c", 9093}}
	if !reflect.DeepEqual(c.ControllerQuorumVoters, wantV) {
		t.Errorf("voters = %v", c.ControllerQuorumVoters)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"/a", "/b"}) || c.MetadataLogDir != "/a/__cluster_metadata" {
		t.Errorf("log.dirs = %v, metadata.log.dir = %s", c.LogDirs, c.MetadataLogDir)
	}
	if c.AutoCreateTopicsEnable || c.CompressionType != "zstd" || c.LogCleanupPolicy != "compact,delete" {
		t.Errorf("got %v %s %s", c.AutoCreateTopicsEnable, c.CompressionType, c.LogCleanupPolicy)
	}
	if !reflect.DeepEqual(c.GossipSeeds, []string{"a:7946", "b:7946"}) {
		t.Errorf("gossip.seeds = %v", c.GossipSeeds)
	}
}

func TestAliases(t *testing.T) {
	const h, m = 3600 * 1000, 60 * 1000
	cases := []struct {
		name      string
		sets      []string
		retention int64
		roll      int64
		dirs      []string
	}{
		{"defaults", nil, 168 * h, 168 * h, []string{"./data"}},
		{"hours", []string{"log.retention.hours=2"}, 2 * h, 168 * h, nil},
		{"minutes over hours", []string{"log.retention.minutes=5", "log.retention.hours=2"}, 5 * m, 168 * h, nil},
		{"ms over minutes and hours", []string{"log.retention.ms=1234", "log.retention.minutes=5", "log.retention.hours=2"}, 1234, 168 * h, nil},
		{"ms over hours, whatever the order", []string{"log.retention.hours=2", "log.retention.ms=1234"}, 1234, 168 * h, nil},
		{"ms -1 forever", []string{"log.retention.ms=-1"}, -1, 168 * h, nil},
		{"hours -1 forever", []string{"log.retention.hours=-1"}, -1, 168 * h, nil},
		{"huge hours saturate", []string{"log.retention.hours=9223372036854775807"}, math.MaxInt64, 168 * h, nil},
		{"roll hours", []string{"log.roll.hours=1"}, 168 * h, h, nil},
		{"roll ms over hours", []string{"log.roll.hours=1", "log.roll.ms=500"}, 168 * h, 500, nil},
		{"log.dir", []string{"log.dir=/one"}, 168 * h, 168 * h, []string{"/one"}},
		{"log.dirs over log.dir", []string{"log.dirs=/x,/y", "log.dir=/one"}, 168 * h, 168 * h, []string{"/x", "/y"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("", nil, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if c.LogRetentionMs != tc.retention {
				t.Errorf("LogRetentionMs = %d, want %d", c.LogRetentionMs, tc.retention)
			}
			if c.LogRollMs != tc.roll {
				t.Errorf("LogRollMs = %d, want %d", c.LogRollMs, tc.roll)
			}
			if tc.dirs != nil && !reflect.DeepEqual(c.LogDirs, tc.dirs) {
				t.Errorf("LogDirs = %v, want %v", c.LogDirs, tc.dirs)
			}
		})
	}
	// Precedence between alias keys holds across sources too.
	c, err := Load("", []string{"KBROKER_LOG_RETENTION_MS=10"}, []string{"log.retention.hours=1"})
	if err != nil || c.LogRetentionMs != 10 {
		t.Errorf("ms from env vs hours from --set: %d, %v", c.LogRetentionMs, err)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want string // "" = valid; else substring of the error
	}{
		{"default", nil, ""},
		{"broker only", []string{"process.roles=broker"}, ""},
		{"broker only without controller listener", []string{"process.roles=broker", "listeners=PLAINTEXT://:9092"}, "listeners: a listener named in controller.listener.names is needed"},
		{"controller only", []string{"process.roles=controller", "listeners=CONTROLLER://:9093"}, ""},
		{"controller only with broker listener", []string{"process.roles=controller"}, "listeners: PLAINTEXT is not a controller listener"},
		{"controller without controller listener", []string{"listeners=PLAINTEXT://:9092"}, "controller.listener.names: the controller role needs a listener named CONTROLLER"},
		{"controller not a voter joins as an observer", []string{"node.id=2"}, ""},
		{"broker not a voter is fine", []string{"node.id=2", "process.roles=broker"}, ""},
		{"broker without broker listener", []string{"listeners=CONTROLLER://:9093"}, "listeners: the broker role needs a listener"},
		{"advertised not in listeners", []string{"advertised.listeners=EXTERNAL://h:1"}, "advertised.listeners: EXTERNAL is not in listeners"},
		{"advertised wildcard", []string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, "advertising a wildcard address"},
		{"advertised empty host", []string{"advertised.listeners=PLAINTEXT://:9092"}, "advertising a wildcard address"},
		{"advertised controller", []string{"advertised.listeners=PLAINTEXT://h:9092,CONTROLLER://h:9093"}, "controller listeners are not advertised"},
		{"inter broker unknown", []string{"inter.broker.listener.name=INTERNAL"}, "inter.broker.listener.name: INTERNAL is not in listeners"},
		{"inter broker controller", []string{"inter.broker.listener.name=CONTROLLER"}, "inter.broker.listener.name: CONTROLLER is a controller listener"},
		{"listener missing from protocol map", []string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9093,INTERNAL://:9094"}, "listener.security.protocol.map: has no entry for listener INTERNAL"},
		{"inter broker defaults to first broker listener", []string{
			"listeners=CONTROLLER://:9093,INTERNAL://:9094,EXTERNAL://:9095",
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}, ""},
		{"message larger than request", []string{"message.max.bytes=2000", "socket.request.max.bytes=1000"}, "message.max.bytes: 2000 is larger than socket.request.max.bytes 1000"},
		{"no voters", []string{"controller.quorum.voters="}, "controller.quorum.voters: must name at least one voter"},
		{"no controller listener names", []string{"controller.listener.names="}, "controller.listener.names: must name at least one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", nil, tc.sets)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, ErrInvalid):
				t.Fatalf("err does not wrap ErrInvalid: %v", err)
			}
		})
	}
	c, err := Load("", nil, []string{
		"listeners=CONTROLLER://:9093,INTERNAL://:9094,EXTERNAL://:9095",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"})
	if err != nil || c.InterBrokerListenerName != "INTERNAL" {
		t.Errorf("inter.broker.listener.name = %q, %v", c.InterBrokerListenerName, err)
	}

	// Validate checks a Config built in code, not only a loaded one.
	d := Default()
	d.NumPartitions = 0
	d.CompressionType = "brotli"
	d.ProcessRoles = []string{"worker"}
	d.LogDirs = nil
	err = d.Validate()
	for _, want := range []string{"num.partitions", "compression.type", "process.roles", "log.dirs"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate of hand-built config: %v, want mention of %s", err, want)
		}
	}
}

func TestProperties(t *testing.T) {
	text := "\uFEFF# header\n" +
		"  node.id = 3  \n" +
		"\n" +
		"log.dirs=/a,\\\n" +
		"    /b,\\\n" +
		"    /c\n" +
		"broker.rack:rack\\u0041\n" +
		"admin.listener\t127.0.0.1:8080\n" +
		"gossip.seeds=x\\:1\n" +
		"listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n" +
		"!listeners=ignored\n" +
		"log.cleanup.policy=compact\\\\\n" +
		"num.partitions=2\n"
	props, err := ParseProperties([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Property{}
	for _, p := range props {
		got[p.Key] = p
	}
	want := []Property{
		{"node.id", "3", 2},
		{"log.dirs", "/a,/b,/c", 4},
		{"broker.rack", "rackA", 7},
		{"admin.listener", "127.0.0.1:8080", 8},
		{"gossip.seeds", "x:1", 9},
		{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", 10},
		{"log.cleanup.policy", `compact\`, 12},
		{"num.partitions", "2", 13},
	}
	if len(props) != len(want) {
		t.Errorf("got %d properties: %+v", len(props), props)
	}
	for _, w := range want {
		if g := got[w.Key]; g != w {
			t.Errorf("%s: got %+v, want %+v", w.Key, g, w)
		}
	}
	if _, err := ParseProperties([]byte("a=\\u12")); err == nil {
		t.Error("short \\u escape: no error")
	}
	if _, err := ParseProperties([]byte("a=\\uzzzz")); err == nil {
		t.Error("bad \\u escape: no error")
	}
	// A continuation on the last line ends the value.
	props, err = ParseProperties([]byte("a=b\\"))
	if err != nil || len(props) != 1 || props[0].Value != "b" {
		t.Errorf("trailing continuation: %+v %v", props, err)
	}
}

func TestBrokerConfigEntries(t *testing.T) {
	c, err := Load("", nil, []string{"num.partitions=6"})
	if err != nil {
		t.Fatal(err)
	}
	entries := c.BrokerConfigEntries()
	if len(entries) != len(keys) {
		t.Fatalf("%d entries, want %d", len(entries), len(keys))
	}
	byName := map[string]ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e := byName["num.partitions"]; e.Value != "6" || e.IsDefault || e.Source != SourceStaticBroker || !e.ReadOnly {
		t.Errorf("num.partitions: %+v", e)
	}
	if e := byName["log.retention.hours"]; e.Value != "168" || !e.IsDefault || e.Source != SourceDefaultConfig {
		t.Errorf("log.retention.hours: %+v", e)
	}
	if e := byName["listeners"]; e.Value != "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093" {
		t.Errorf("listeners: %+v", e)
	}
}

func TestMaxConnectionsPerIPOverrides(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    map[string]int32
		wantErr bool
	}{
		{value: "", want: map[string]int32{}},
		{value: "127.0.0.1:5, broker-a:0", want: map[string]int32{"127.0.0.1": 5, "broker-a": 0}},
		{value: "::1:7,[fe80::1]:2", want: map[string]int32{"::1": 7, "fe80::1": 2}},
		{value: "host", wantErr: true},
		{value: "host:-1", wantErr: true},
		{value: "host:x", wantErr: true},
		{value: "h:1,h:2", wantErr: true},
	} {
		c, err := Load("", nil, []string{"max.connections.per.ip.overrides=" + tc.value})
		if tc.wantErr {
			if err == nil {
				t.Errorf("%q: no error", tc.value)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		if !reflect.DeepEqual(c.MaxConnectionsPerIPOverrides, tc.want) {
			t.Errorf("%q: %v, want %v", tc.value, c.MaxConnectionsPerIPOverrides, tc.want)
		}
	}
	d := Default()
	if d.MaxConnections != math.MaxInt32 || d.MaxConnectionsPerIP != math.MaxInt32 ||
		d.ConnectionsMaxIdleMs != 600000 || d.QueuedMaxRequestBytes != 104857600 {
		t.Errorf("connection defaults: %d %d %d %d", d.MaxConnections, d.MaxConnectionsPerIP, d.ConnectionsMaxIdleMs, d.QueuedMaxRequestBytes)
	}
}
