package observability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"sigs.k8s.io/yaml"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

const (
	dashboardFile = "../grafana/kbroker.json"
	rulesFile     = "../prometheus/kbroker-rules.yml"
	configFile    = "../prometheus/prometheus.yml"
	runbookFile   = "../prometheus/RUNBOOK.md"

	// The Grafana data source variable every query goes through.
	dsVariable = "${DS_PROMETHEUS}"
)

// prometheusSynthesised are the series Prometheus adds to every scrape
// itself: the rules may use them though no node exports them.
var prometheusSynthesised = setOf("up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added")

// query is one PromQL expression of the dashboard or the rules, with
// where it came from.
type query struct {
	where string
	expr  string
}

// grafanaVars stands for the dashboard's variables when an expression is
// handed to the scanner or to promtool.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m",
	"$__range", "1h", "${__range}", "1h",
	"${job}", "kbroker", "$job", "kbroker",
	"${instance}", ".*", "$instance", ".*",
	"${group}", ".*", "$group", ".*",
)

// The dashboard's JSON model, the parts the checks read.
type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// queries are the dashboard's PromQL expressions: every target, and the
// series selector of each label_values() variable query.
func (d dashboard) queries(t *testing.T) []query {
	t.Helper()
	var qs []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("dashboard panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable %s: query is neither a string nor {query: string}: %s", v.Name, v.Query)
			}
			q = obj.Query
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: want label_values(selector, label), got %q", v.Name, q)
		}
		qs = append(qs, query{"dashboard variable " + v.Name, m[1]})
	}
	return qs
}

// The rules file, the parts the checks read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(data, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

func (rf ruleFile) queries() []query {
	var qs []query
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{fmt.Sprintf("rule %s/%s%s", g.Name, r.Alert, r.Record), r.Expr})
		}
	}
	return qs
}

// TestDashboardModel checks the dashboard's structure: a Prometheus data
// source variable that every panel and query uses, job and instance
// variables, unique panel ids, panels inside the 24-column grid, and
// every expression selecting the chosen job.
func TestDashboardModel(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != dsVariable) {
			t.Errorf("variable %s: data source %+v, want uid %s", v.Name, v.Datasource, dsVariable)
		}
	}
	for name, typ := range map[string]string{"DS_PROMETHEUS": "datasource", "job": "query", "instance": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
	ids := map[int]string{}
	targets := 0
	for _, p := range d.allPanels() {
		if prev, ok := ids[p.ID]; ok || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or also used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != dsVariable {
			t.Errorf("panel %q: data source %+v, want uid %s", p.Title, p.Datasource, dsVariable)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			targets++
			if tg.Datasource == nil || tg.Datasource.UID != dsVariable {
				t.Errorf("panel %q target %s: data source %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, dsVariable)
			}
			if !strings.Contains(tg.Expr, `job="$job"`) {
				t.Errorf("panel %q target %s does not select job=\"$job\": %s", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
	if targets < 30 {
		t.Errorf("only %d queries in the dashboard", targets)
	}
}

// TestRulesModel checks that every alert has a for: duration, a severity,
// a summary, a description and a runbook annotation naming a section of
// RUNBOOK.md that exists.
func TestRulesModel(t *testing.T) {
	rf := loadRules(t)
	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	seen := map[string]bool{}
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("alert %s: for %q, want a positive duration", r.Alert, r.For)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s: no %s annotation", r.Alert, a)
				}
			}
			file, anchor, _ := strings.Cut(r.Annotations["runbook"], "#")
			if file != "deploy/prometheus/RUNBOOK.md" || !anchors[anchor] {
				t.Errorf("alert %s: runbook %q names no section of %s", r.Alert, r.Annotations["runbook"], runbookFile)
			}
			if anchor != githubAnchor(r.Alert) {
				t.Errorf("alert %s: runbook anchor %q, want #%s", r.Alert, anchor, githubAnchor(r.Alert))
			}
		}
	}
	for _, want := range []string{"KbrokerBrokerDown", "KbrokerOfflinePartitions", "KbrokerUnderReplicatedPartitions",
		"KbrokerUnderMinISRPartitions", "KbrokerNoActiveController", "KbrokerMultipleActiveControllers",
		"KbrokerOfflineLogDirs", "KbrokerRequestLatencyHigh", "KbrokerISRFlapping",
		"KbrokerQuotaThrottlingSustained", "KbrokerAuthenticationFailures", "KbrokerConsumerGroupLagHigh"} {
		if !seen[want] {
			t.Errorf("no alert %s", want)
		}
	}
	t.Logf("%d alerts", alerts)
}

// githubAnchor is the fragment a Markdown heading gets on GitHub.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestPromtool has Prometheus's own tool check the rules, the
// configuration, and every dashboard expression (as recording rules of a
// scratch rules file, with the Grafana variables filled in).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (Debian's prometheus package ships it; .ci/run installs it): skipping promtool check rules/config; the scanner checks still run")
	}
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", rulesFile)
	run("check", "config", configFile)

	type rec struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var recs []rec
	for i, q := range loadDashboard(t).queries(t) {
		recs = append(recs, rec{fmt.Sprintf("dashboard:query_%d", i), grafanaVars.Replace(q.expr)})
	}
	data, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": recs}}})
	if err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(scratch, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", scratch)
}

// TestExpressionsUseExportedMetrics starts a node, makes it create its
// lazily created series, and fails on any metric name in the dashboard or
// the rules that its /metrics does not export.
func TestExpressionsUseExportedMetrics(t *testing.T) {
	var qs []query
	qs = append(qs, loadDashboard(t).queries(t)...)
	qs = append(qs, loadRules(t).queries()...)
	used := map[string][]string{} // metric name -> where
	for _, q := range qs {
		names, err := metricNames(grafanaVars.Replace(q.expr))
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s selects no metric: %s", q.where, q.expr)
		}
		for _, n := range names {
			used[n] = append(used[n], q.where)
		}
	}
	if t.Failed() {
		return
	}

	n := startNode(t)
	n.drive(t)

	var families map[string]string
	var missing []string
	// The quota sensor and the group appear once the metadata image and
	// the coordinator have caught up; poll for a little while.
	err := testutil.Poll(context.Background(), 30*time.Second, func() error {
		var err error
		families, err = scrape(n.admin)
		if err != nil {
			return err
		}
		missing = missing[:0]
		for name := range used {
			if !exported(name, families) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not exported: %v", missing)
		}
		return nil
	})
	if err != nil {
		sort.Strings(missing)
		var b strings.Builder
		for _, m := range missing {
			fmt.Fprintf(&b, "\n  %s, used by:\n    %s", m, strings.Join(used[m], "\n    "))
		}
		exp := make([]string, 0, len(families))
		for f := range families {
			exp = append(exp, f)
		}
		sort.Strings(exp)
		t.Fatalf("metrics the node does not export (renamed, or not created by this test's traffic):%s\nexported: %s\nlast error: %v",
			b.String(), strings.Join(exp, " "), err)
	}
	// The group committed all it consumed, then the throttled client
	// wrote lagRecords more: the coordinator's lag is exactly those.
	if got, err := sample(n.admin, "kbroker_consumer_group_lag_sum", `group="`+group+`"`); err != nil || got != lagRecords {
		t.Errorf("kbroker_consumer_group_lag_sum{group=%q} = %v (%v), want %d", group, got, err, lagRecords)
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("%d expressions use %d metric names, all exported: %s", len(qs), len(names), strings.Join(names, " "))
}

// exported reports whether name is a series of one of families (name ->
// type), a histogram's or summary's _bucket, _sum and _count included.
func exported(name string, families map[string]string) bool {
	if prometheusSynthesised[name] {
		return true
	}
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch families[base] {
		case "histogram":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// scrape returns the metric families /metrics on admin serves, name ->
// type, from the text format's # TYPE lines (a family without samples
// has none, so a declared but unused vector does not count).
func scrape(admin string) (map[string]string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	families := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = f[3]
		}
	}
	return families, sc.Err()
}

// sample returns the value of the one sample of metric name whose labels
// contain label (name="value") on admin's /metrics.
func sample(admin, name, label string) (float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok || !strings.Contains(rest, label) {
			continue
		}
		f := strings.Fields(line)
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no sample %s{%s}", name, label)
}

// node is one kbroker process: broker and its own single controller, with
// a PLAINTEXT listener, a SASL_PLAINTEXT (SCRAM-SHA-256) listener and the
// admin listener.
type node struct {
	addr, sasl, admin string
	cmd               *exec.Cmd
	done              chan struct{}
	log               string
}

const (
	scramUser   = "observer"
	scramPass   = "observer-secret"
	throttledID = "observability-throttled"
	topic       = "observability"
	group       = "observability-group"
	// lagRecords are produced after the group's last commit.
	lagRecords = 4
)

func startNode(t *testing.T) *node {
	t.Helper()
	work := t.TempDir()
	bin := testutil.BuildKbroker(t, work)
	for attempt := 1; ; attempt++ {
		data := filepath.Join(work, fmt.Sprintf("data-%d", attempt))
		if err := os.Mkdir(data, 0o750); err != nil {
			t.Fatal(err)
		}
		ports := testutil.MustReservePorts(t, 4)
		n := &node{addr: ports.Addr(0), sasl: ports.Addr(2), admin: ports.Addr(3),
			log: filepath.Join(work, fmt.Sprintf("kbroker-%d.log", attempt)), done: make(chan struct{})}
		ctrl := ports.Addr(1)
		args := []string{"serve",
			"--set", "node.id=1",
			"--set", "process.roles=broker,controller",
			"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s,SASL://%s", n.addr, ctrl, n.sasl),
			"--set", fmt.Sprintf("advertised.listeners=PLAINTEXT://%s,SASL://%s", n.addr, n.sasl),
			"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT",
			"--set", "inter.broker.listener.name=PLAINTEXT",
			"--set", "sasl.enabled.mechanisms=SCRAM-SHA-256",
			"--set", "controller.quorum.voters=1@" + ctrl,
			"--set", "log.dirs=" + data,
			"--set", "admin.listener=" + n.admin,
			"--set", "offsets.topic.replication.factor=1",
			"--set", "group.initial.rebalance.delay.ms=0",
			"--add-scram", fmt.Sprintf("SCRAM-SHA-256=[name=%s,password=%s]", scramUser, scramPass),
		}
		logFile, err := os.Create(n.log)
		if err != nil {
			t.Fatal(err)
		}
		n.cmd = exec.Command(bin, args...)
		n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
		ports.MustRelease(t)
		if err := n.cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("starting kbroker: %v", err)
		}
		go func() {
			_ = n.cmd.Wait()
			logFile.Close()
			close(n.done)
		}()
		t.Cleanup(func() { n.stop(t) })
		err = testutil.Poll(context.Background(), 30*time.Second, func() error {
			select {
			case <-n.done:
				return testutil.Permanent(errors.New("kbroker exited during start"))
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return clustercheck.Ready(ctx, n.addr)
		})
		if err == nil {
			return n
		}
		tail := n.logTail()
		n.stop(t)
		if attempt == 3 || !testutil.AddrInUse(err, tail) {
			t.Fatalf("kbroker not ready: %v\nlog tail:\n%s", err, tail)
		}
		t.Logf("start attempt %d lost a port, retrying on new ones: %v", attempt, err)
	}
}

// stop sends SIGTERM (a controlled shutdown) and SIGKILL after 30s.
func (n *node) stop(t *testing.T) {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		t.Errorf("kbroker did not exit within 30s of SIGTERM; killing it")
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	if t.Failed() {
		t.Logf("kbroker log tail:\n%s", n.logTail())
	}
}

func (n *node) logTail() string {
	data, _ := os.ReadFile(n.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// drive makes the series the dashboard and the rules read exist: a topic,
// acks=all writes, a group that consumes and commits, a client over a
// produce quota, and a failed SASL authentication.
func (n *node) drive(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.addr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(client())
	resp, err := adm.CreateTopic(ctx, 3, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	name := throttledID
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}},
	}}); err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}

	const records = 100
	// Round robin: every partition gets records, so the group commits
	// an offset on each and lag counts wherever the later records go.
	prod := client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "record-%d", i)})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	cons := client(kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for got := 0; got < records; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume (%d of %d records): %v", got, records, err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// 16 KiB at 1 KiB/s: throttled (the quota reaches the broker through
	// the metadata log; the first batches may pass before it does). The
	// group has not consumed these: its lag is lagRecords.
	slow := client(kgo.ClientID(throttledID), kgo.DefaultProduceTopic(topic))
	big := make([]byte, 4096)
	for range lagRecords {
		if err := slow.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr(); err != nil {
			t.Fatalf("produce as %s: %v", throttledID, err)
		}
	}

	bad := client(kgo.SeedBrokers(n.sasl), kgo.SASL(kscram.Auth{User: scramUser, Pass: "wrong"}.AsSha256Mechanism()),
		kgo.RequestRetries(0))
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if err := bad.Ping(pctx); err == nil {
		t.Fatal("SASL with a wrong password succeeded")
	}
	good := client(kgo.SeedBrokers(n.sasl), kgo.SASL(kscram.Auth{User: scramUser, Pass: scramPass}.AsSha256Mechanism()))
	if err := good.Ping(ctx); err != nil {
		t.Fatalf("SASL with the right password: %v", err)
	}
}
