package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testutil"
)

// startInProcessBroker runs a single-node broker and controller in this
// process and returns its client address.
func startInProcessBroker(t *testing.T) string {
	t.Helper()
	return startInProcessBrokerWith(t, "PLAINTEXT", nil)
}

// startInProcessBrokerWith is startInProcessBroker with one more
// listener on 127.0.0.1:0 (unless it is PLAINTEXT, which is always
// there), more config keys (sets) and node options; it returns the
// address of listener.
func startInProcessBrokerWith(t *testing.T, listener string, sets []string, opts ...cluster.NodeOption) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr, err := tryStartInProcessBroker(t, listener, sets, opts...)
		if err == nil {
			return addr
		}
		if attempt == 3 || !testutil.AddrInUse(err, "") {
			t.Fatal(err)
		}
	}
}

func tryStartInProcessBroker(t *testing.T, listener string, sets []string, opts ...cluster.NodeOption) (string, error) {
	ports := testutil.MustReservePorts(t, 1)
	ctrl := ports.Addr(0)
	listeners := "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrl
	if listener != "PLAINTEXT" {
		listeners += "," + listener + "://127.0.0.1:0"
	}
	cfg, err := config.Load("", nil, append([]string{
		"node.id=1",
		listeners,
		"controller.quorum.voters=1@" + ctrl,
		"log.dirs=" + t.TempDir(),
		"offsets.topic.replication.factor=1",
	}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	n, err := cluster.NewNode(cfg, slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ports.MustRelease(t)
	go func() { done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-done:
		cancel()
		return "", fmt.Errorf("broker exited before ready: %w", err)
	case <-time.After(30 * time.Second):
		cancel()
		if err := <-done; err != nil {
			return "", fmt.Errorf("broker not ready after 30s, then stopped with: %w", err)
		}
		return "", fmt.Errorf("broker not ready after 30s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("broker shutdown: %v", err)
		}
	})
	addr, ok := n.Addr(listener)
	if !ok {
		t.Fatalf("no listener %s", listener)
	}
	return addr, nil
}

// runAdmin runs `kbroker admin args...` against addr.
func runAdmin(t *testing.T, addr string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	// Flags follow the command words.
	n := 1
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		n = 2
	}
	full := append(append(append([]string(nil), args[:n]...), "--bootstrap-server", addr, "--timeout", "20s"), args[n:]...)
	code = Run(full, &out, &errb)
	return out.String(), errb.String(), code
}

// mustAdmin runs an admin command that must succeed.
func mustAdmin(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, errs, code := runAdmin(t, addr, args...)
	if code != 0 {
		t.Fatalf("kbroker admin %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v in\n%s", err, s)
	}
}

// Topics through their whole life: create, list, describe as a table and
// as JSON, alter the partition count, set and read a config, delete.
func TestAdminTopicsAndConfigs(t *testing.T) {
	addr := startInProcessBroker(t)
	out := mustAdmin(t, addr, "topics", "create", "--topic", "orders", "--partitions", "2", "--replication-factor", "1", "--config", "retention.ms=60000")
	if !strings.Contains(out, "orders") || !strings.Contains(out, "OK") {
		t.Fatalf("create:\n%s", out)
	}
	if _, _, code := runAdmin(t, addr, "topics", "create", "--topic", "orders"); code != 1 {
		t.Fatalf("creating an existing topic: exit %d, want 1", code)
	}
	if out := mustAdmin(t, addr, "topics", "list"); strings.TrimSpace(out) != "orders" {
		t.Fatalf("list:\n%s", out)
	}
	out = mustAdmin(t, addr, "topics", "describe", "--topic", "orders")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "TOPIC") {
		t.Fatalf("describe table:\n%s", out)
	}

	mustAdmin(t, addr, "topics", "alter", "--topic", "orders", "--partitions", "3")
	var described []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32   `json:"partition"`
			Leader    int32   `json:"leader"`
			ISR       []int32 `json:"isr"`
		} `json:"partitions"`
	}
	mustJSON(t, mustAdmin(t, addr, "topics", "describe", "--topic", "orders", "--output", "json"), &described)
	if len(described) != 1 || len(described[0].Partitions) != 3 || described[0].Partitions[2].Leader != 1 {
		t.Fatalf("described %+v", described)
	}

	var configs []struct {
		Name    string `json:"name"`
		Configs []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"configs"`
	}
	valueOf := func(key string) string {
		t.Helper()
		configs = nil
		mustJSON(t, mustAdmin(t, addr, "configs", "describe", "--entity-type", "topics", "--entity-name", "orders", "--output", "json"), &configs)
		for _, c := range configs[0].Configs {
			if c.Name == key && c.Value != nil {
				return *c.Value + " " + c.Source
			}
		}
		return ""
	}
	if got := valueOf("retention.ms"); got != "60000 DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms after create: %q", got)
	}
	mustAdmin(t, addr, "configs", "alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config", "retention.ms=120000,cleanup.policy=compact")
	if got := valueOf("cleanup.policy"); got != "compact DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("cleanup.policy: %q", got)
	}
	mustAdmin(t, addr, "configs", "alter", "--entity-type", "topics", "--entity-name", "orders", "--delete-config", "cleanup.policy")
	if got := valueOf("cleanup.policy"); got != "delete DEFAULT_CONFIG" {
		t.Fatalf("cleanup.policy after delete: %q", got)
	}
	if _, _, code := runAdmin(t, addr, "configs", "alter", "--entity-type", "topics", "--entity-name", "orders", "--add-config", "retention.ms=soon"); code != 1 {
		t.Fatalf("invalid config value: exit %d, want 1", code)
	}
	mustAdmin(t, addr, "configs", "alter", "--entity-type", "brokers", "--add-config", "log.retention.ms=3600000")
	configs = nil
	mustJSON(t, mustAdmin(t, addr, "configs", "describe", "--entity-type", "brokers", "--output", "json"), &configs)
	found := false
	for _, c := range configs[0].Configs {
		if c.Name == "log.retention.ms" {
			found = c.Value != nil && *c.Value == "3600000" && c.Source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
		}
	}
	if !found {
		t.Fatalf("broker configs: no dynamic log.retention.ms=3600000 in %+v", configs)
	}

	mustAdmin(t, addr, "topics", "delete", "--topic", "orders")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.TrimSpace(mustAdmin(t, addr, "topics", "list")) == ""
	}, "orders deleted")
}

// A group's committed offsets are listed with their lag, reset to the
// earliest, a clamped explicit offset and the latest (dry run first),
// and the group is deleted.
func TestAdminGroupsResetOffsets(t *testing.T) {
	addr := startInProcessBroker(t)
	mustAdmin(t, addr, "topics", "create", "--topic", "events", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "events", Partition: 0, At: 4, LeaderEpoch: -1})
	if res, err := adm.CommitOffsets(ctx, "readers", commit); err != nil || res.Error() != nil {
		t.Fatalf("commit: %v %v", err, res.Error())
	}
	committed := func() int64 {
		t.Helper()
		res, err := adm.FetchOffsets(ctx, "readers")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := res.Lookup("events", 0)
		return o.At
	}

	if out := mustAdmin(t, addr, "groups", "list"); !strings.Contains(out, "readers") {
		t.Fatalf("list:\n%s", out)
	}
	var described []struct {
		Group      string `json:"group"`
		Partitions []struct {
			CurrentOffset int64 `json:"currentOffset"`
			LogEndOffset  int64 `json:"logEndOffset"`
			Lag           int64 `json:"lag"`
		} `json:"partitions"`
	}
	mustJSON(t, mustAdmin(t, addr, "groups", "describe", "--group", "readers", "--output", "json"), &described)
	if len(described) != 1 || len(described[0].Partitions) != 1 {
		t.Fatalf("described %+v", described)
	}
	if p := described[0].Partitions[0]; p.CurrentOffset != 4 || p.LogEndOffset != 10 || p.Lag != 6 {
		t.Fatalf("lag %+v", p)
	}

	out := mustAdmin(t, addr, "groups", "reset-offsets", "--group", "readers", "--to-earliest")
	if !strings.Contains(out, "dry run") || committed() != 4 {
		t.Fatalf("dry run changed the offset (%d):\n%s", committed(), out)
	}
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{[]string{"--to-earliest"}, 0},
		{[]string{"--to-offset", "100"}, 10},
		{[]string{"--to-offset", "7", "--topic", "events"}, 7},
		{[]string{"--to-latest"}, 10},
	} {
		args := append([]string{"groups", "reset-offsets", "--group", "readers", "--execute"}, tc.args...)
		mustAdmin(t, addr, args...)
		if got := committed(); got != tc.want {
			t.Fatalf("%v: committed %d, want %d", tc.args, got, tc.want)
		}
	}
	if _, _, code := runAdmin(t, addr, "groups", "reset-offsets", "--group", "readers", "--to-earliest", "--to-latest"); code != 2 {
		t.Fatalf("two targets: exit %d, want 2", code)
	}
	mustAdmin(t, addr, "groups", "delete", "--group", "readers")
	if out := mustAdmin(t, addr, "groups", "list"); strings.Contains(out, "readers") {
		t.Fatalf("deleted group still listed:\n%s", out)
	}
}

// elect-leaders on a single broker finds every election not needed (exit
// 0), log-dirs describe shows the partition's bytes, and reassign
// --generate prints Kafka's two JSON documents.
func TestAdminElectLogDirsReassign(t *testing.T) {
	addr := startInProcessBroker(t)
	mustAdmin(t, addr, "topics", "create", "--topic", "sized", "--partitions", "2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: bytes.Repeat([]byte("x"), 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := mustAdmin(t, addr, "elect-leaders", "--preferred", "--topic", "sized")
	if strings.Count(out, "ELECTION_NOT_NEEDED") != 2 {
		t.Fatalf("elect-leaders:\n%s", out)
	}
	out = mustAdmin(t, addr, "elect-leaders", "--unclean", "--topic", "sized", "--partition", "0", "--output", "json")
	var elected []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Error     string `json:"error"`
	}
	mustJSON(t, out, &elected)
	if len(elected) != 1 || elected[0].Partition != 0 || !strings.Contains(elected[0].Error, "ELECTION_NOT_NEEDED") {
		t.Fatalf("unclean: %+v", elected)
	}
	if _, _, code := runAdmin(t, addr, "elect-leaders", "--preferred", "--topic", "sized", "--partition", "9"); code != 1 {
		t.Fatalf("unknown partition: exit %d, want 1", code)
	}
	if _, _, code := runAdmin(t, addr, "elect-leaders"); code != 2 {
		t.Fatalf("no election type: exit %d, want 2", code)
	}

	var dirs struct {
		Version int `json:"version"`
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				Error       *string `json:"error"`
				TotalBytes  int64   `json:"totalBytes"`
				UsableBytes int64   `json:"usableBytes"`
				Partitions  []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	mustJSON(t, mustAdmin(t, addr, "log-dirs", "describe", "--topic", "sized", "--output", "json"), &dirs)
	if dirs.Version != 1 || len(dirs.Brokers) != 1 || len(dirs.Brokers[0].LogDirs) != 1 {
		t.Fatalf("log dirs %+v", dirs)
	}
	d := dirs.Brokers[0].LogDirs[0]
	sizes := map[string]int64{}
	for _, p := range d.Partitions {
		sizes[p.Partition] = p.Size
	}
	if d.Error != nil || d.TotalBytes <= 0 || len(sizes) != 2 || sizes["sized-0"] != 0 || sizes["sized-1"] < 1000 {
		t.Fatalf("log dir %+v", d)
	}
	if out, _, code := runAdmin(t, addr, "log-dirs", "move", "--broker", "1", "--dir", t.TempDir(), "--topic", "sized"); code != 1 || strings.Count(out, "LOG_DIR_NOT_FOUND") != 2 {
		t.Fatalf("log-dirs move to a dir not in log.dirs: exit %d\n%s", code, out)
	}
	if _, _, code := runAdmin(t, addr, "log-dirs", "move", "--broker", "1", "--topic", "sized"); code != 2 {
		t.Fatalf("log-dirs move without --dir: exit %d, want 2", code)
	}
	if out := mustAdmin(t, addr, "log-dirs", "describe", "--broker", "1"); !strings.Contains(out, "sized") {
		t.Fatalf("log-dirs table:\n%s", out)
	}

	out = mustAdmin(t, addr, "reassign", "--generate", "--brokers", "1", "--topics", "sized")
	parts := strings.Split(strings.TrimSpace(out), "\n")
	if len(parts) != 5 || parts[0] != "Current partition replica assignment" || parts[3] != "Proposed partition reassignment configuration" {
		t.Fatalf("reassign:\n%s", out)
	}
	var proposed reassignment
	mustJSON(t, parts[4], &proposed)
	if len(proposed.Partitions) != 2 || proposed.Partitions[1].Replicas[0] != 1 || proposed.Partitions[1].LogDirs[0] != "any" {
		t.Fatalf("proposed %+v", proposed)
	}
	if _, _, code := runAdmin(t, addr, "reassign", "--generate", "--brokers", "1,7", "--topics", "sized"); code != 1 {
		t.Fatalf("unknown broker: exit %d, want 1", code)
	}

	// Execute the proposal (broker 1 only: nothing moves), verify it is
	// complete; there is nothing left to cancel.
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(parts[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustAdmin(t, addr, "reassign", "--execute", planFile); strings.Count(out, "started") != 2 {
		t.Fatalf("execute:\n%s", out)
	}
	var verified []struct {
		Topic  string `json:"topic"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	mustJSON(t, mustAdmin(t, addr, "reassign", "--verify", planFile, "--output", "json"), &verified)
	if len(verified) != 2 || verified[0].Status != "complete" || verified[1].Status != "complete" {
		t.Fatalf("verify: %+v", verified)
	}
	out, _, code := runAdmin(t, addr, "reassign", "--cancel", planFile)
	if code != 1 || !strings.Contains(out, "NO_REASSIGNMENT_IN_PROGRESS") {
		t.Fatalf("cancel with nothing in progress: exit %d\n%s", code, out)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, []byte(`{"version":1,"partitions":[{"topic":"sized","partition":0,"replicas":[1,2]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runAdmin(t, addr, "reassign", "--verify", other); code != 1 || !strings.Contains(out, "replicas are 1") {
		t.Fatalf("verify of a plan never executed: exit %d\n%s", code, out)
	}
	if _, _, code := runAdmin(t, addr, "reassign", "--execute", other, "--generate"); code != 2 {
		t.Fatalf("two modes: exit %d, want 2", code)
	}
}

func TestBalancedPlan(t *testing.T) {
	current := map[string][][]int32{
		"a": {{1, 2}, {2, 1}, {1, 2}},
		"b": {{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}},
	}
	plan, err := balancedPlan(current, []int32{4, 3, 2, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, p := range plan.Partitions {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] {
			t.Fatalf("%s-%d: replicas %v", p.Topic, p.Partition, p.Replicas)
		}
		leaders[p.Replicas[0]]++
		for _, r := range p.Replicas {
			replicas[r]++
		}
	}
	for _, b := range []int32{1, 2, 3, 4} {
		if leaders[b] != 2 || replicas[b] != 4 {
			t.Fatalf("broker %d leads %d and holds %d replicas, want 2 and 4 (%v %v)", b, leaders[b], replicas[b], leaders, replicas)
		}
	}
	if _, err := balancedPlan(map[string][][]int32{"c": {{1, 2, 3}}}, []int32{1, 2}); err == nil {
		t.Fatal("replication factor 3 on 2 brokers planned")
	}
}

func TestAdminUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"help"}, 0},
		{[]string{"nope"}, 2},
		{[]string{"topics", "create", "--output", "yaml", "--topic", "x"}, 2},
		{[]string{"topics", "create"}, 2},
		{[]string{"topics", "list", "extra"}, 2},
		{[]string{"configs", "describe", "--entity-type", "users"}, 2},
	} {
		if code := Run(tc.args, io.Discard, io.Discard); code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

// brokers list shows the broker, alive and controller, as a table and as
// JSON; brokers unregister refuses the live broker (INVALID_REQUEST) and
// an unknown id (BROKER_ID_NOT_REGISTERED) with exit 1, and a missing
// --id with exit 2.
func TestAdminBrokers(t *testing.T) {
	addr := startInProcessBroker(t)
	out := mustAdmin(t, addr, "brokers", "list")
	if !strings.Contains(out, "STATE") || !strings.Contains(out, "alive") || !strings.Contains(out, addr) {
		t.Fatalf("brokers list:\n%s", out)
	}
	var listed []struct {
		ID         int32  `json:"id"`
		Host       string `json:"host"`
		Fenced     bool   `json:"fenced"`
		Controller bool   `json:"controller"`
	}
	mustJSON(t, mustAdmin(t, addr, "brokers", "list", "--output", "json"), &listed)
	if len(listed) != 1 || listed[0].ID != 1 || listed[0].Fenced || !listed[0].Controller {
		t.Fatalf("brokers list json: %+v", listed)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"brokers", "unregister", "--id", "1"}, 1, "INVALID_REQUEST"},
		{[]string{"brokers", "unregister", "--id", "9", "--output", "json"}, 1, "BROKER_ID_NOT_REGISTERED"},
		{[]string{"brokers", "unregister"}, 2, "--id is required"},
	} {
		stdout, stderr, code := runAdmin(t, addr, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, stdout, stderr)
		}
	}
	mustJSON(t, mustAdmin(t, addr, "brokers", "list", "--output", "json"), &listed)
	if len(listed) != 1 {
		t.Fatalf("the refused unregistrations changed the brokers: %+v", listed)
	}

	// A per-broker value is described as broker 1's own.
	mustAdmin(t, addr, "configs", "alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.retention.ms=5000")
	var configs []struct {
		Configs []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"configs"`
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		configs = nil
		mustJSON(t, mustAdmin(t, addr, "configs", "describe", "--entity-type", "brokers", "--entity-name", "1", "--output", "json"), &configs)
		for _, c := range configs[0].Configs {
			if c.Name == "log.retention.ms" && c.Value != nil && *c.Value == "5000" && c.Source == "DYNAMIC_BROKER_CONFIG" {
				return nil
			}
		}
		return fmt.Errorf("no per-broker log.retention.ms=5000 in %+v", configs)
	}, "broker 1's own log.retention.ms described")
}

// quorum describe shows the single voter as leader, as a table and as
// JSON; add-voter and remove-voter answer Kafka's codes with exit 1
// (the voter exists, is unknown, is the last one) and a missing --id
// with exit 2.
func TestAdminQuorum(t *testing.T) {
	addr := startInProcessBroker(t)
	out := mustAdmin(t, addr, "quorum", "describe")
	if !strings.Contains(out, "LeaderId: 1") || !strings.Contains(out, "LOG-END-OFFSET") || !strings.Contains(out, "Leader ") {
		t.Fatalf("quorum describe:\n%s", out)
	}
	var described struct {
		LeaderID      int32 `json:"leaderId"`
		LeaderEpoch   int32 `json:"leaderEpoch"`
		HighWatermark int64 `json:"highWatermark"`
		Replicas      []struct {
			ID           int32  `json:"id"`
			Status       string `json:"status"`
			LogEndOffset int64  `json:"logEndOffset"`
			Lag          int64  `json:"lag"`
			Address      string `json:"address"`
		} `json:"replicas"`
	}
	mustJSON(t, mustAdmin(t, addr, "quorum", "describe", "--output", "json"), &described)
	if described.LeaderID != 1 || described.LeaderEpoch < 1 || described.HighWatermark < 1 || len(described.Replicas) != 1 {
		t.Fatalf("quorum describe json: %+v", described)
	}
	if r := described.Replicas[0]; r.ID != 1 || r.Status != "Leader" || r.LogEndOffset < described.HighWatermark || r.Lag != 0 || r.Address == "" {
		t.Fatalf("quorum describe json replica: %+v", r)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"quorum", "add-voter", "--id", "1"}, 1, "DUPLICATE_VOTER"},
		{[]string{"quorum", "add-voter", "--id", "9", "--timeout", "1s"}, 1, "REQUEST_TIMED_OUT"},
		{[]string{"quorum", "add-voter"}, 2, "--id is required"},
		{[]string{"quorum", "add-voter", "--id", "2", "--controller-listener", "CONTROLLER://nohost"}, 2, "--controller-listener"},
		{[]string{"quorum", "remove-voter", "--id", "9", "--output", "json"}, 1, "VOTER_NOT_FOUND"},
		{[]string{"quorum", "remove-voter", "--id", "1"}, 1, "last voter"},
	} {
		stdout, stderr, code := runAdmin(t, addr, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, stdout, stderr)
		}
	}
}

func TestAdminFeatures(t *testing.T) {
	addr := startInProcessBroker(t)
	out := mustAdmin(t, addr, "features", "describe")
	if !strings.Contains(out, "metadata.version") || !strings.Contains(out, "FINALIZED") {
		t.Fatalf("features describe:\n%s", out)
	}
	var described []struct {
		Name      string `json:"name"`
		Finalized int16  `json:"finalizedVersionLevel"`
		Max       int16  `json:"supportedMaxVersion"`
	}
	mustJSON(t, mustAdmin(t, addr, "features", "describe", "--output", "json"), &described)
	levels := map[string]int16{}
	for _, f := range described {
		levels[f.Name] = f.Finalized
	}
	if levels["metadata.version"] < 2 || levels["group.version"] != 1 {
		t.Fatalf("finalized levels of a new cluster: %v", levels)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"features", "downgrade", "--feature", "group.version=0", "--dry-run"}, 0, "group.version can be downgraded to 0."},
		{[]string{"features", "upgrade", "--feature", "group.version=0"}, 1, "INVALID_UPDATE_VERSION"},
		{[]string{"features", "upgrade", "--feature", "metadata.version=99"}, 1, "Could not upgrade metadata.version to 99."},
		{[]string{"features", "upgrade", "--feature", "metadata.version"}, 2, "want NAME=LEVEL"},
		{[]string{"features", "upgrade"}, 2, "--feature is required"},
		{[]string{"features", "disable", "--feature", "group.version"}, 0, "group.version was disabled."},
		{[]string{"features", "upgrade", "--feature", "group.version=1"}, 0, "group.version was upgraded to 1."},
	} {
		stdout, stderr, code := runAdmin(t, addr, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.want, stdout, stderr)
		}
	}
}
