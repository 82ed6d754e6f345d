package metadata

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestReportBrokerDeadRefusedFencesAtOnce: a broker that heartbeated just
// now is fenced by a dead report at once when nothing listens at its
// endpoint (the process is gone), and only suspected when its listener
// still accepts (gossip may be wrong).
func TestReportBrokerDeadRefusedFencesAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.SessionTimeout = time.Minute
	cfg.DeadReportGrace = time.Minute // only the probe can fence here
	s := openReady(t, cfg)

	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close() // nothing listens there any more

	endpoint := func(port int) []Endpoint {
		return []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: int32(port), SecurityProtocol: "PLAINTEXT"}}
	}
	regs := []BrokerRegistration{
		{ID: 1, IncarnationID: "inc-1", Endpoints: endpoint(live.Addr().(*net.TCPAddr).Port)},
		{ID: 2, IncarnationID: "inc-2", Endpoints: endpoint(deadPort)},
	}
	for _, r := range regs {
		if err := s.RegisterBroker(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Heartbeat(ctx, r.ID, s.Image().Brokers[r.ID].Epoch); err != nil {
			t.Fatal(err)
		}
		if s.Image().Brokers[r.ID].Fenced {
			t.Fatalf("broker %d still fenced after its heartbeat", r.ID)
		}
	}
	for _, tc := range []struct {
		id         int32
		wantFenced bool
	}{
		{1, false},
		{2, true},
	} {
		if err := s.ReportBrokerDead(ctx, tc.id); err != nil {
			t.Fatalf("report about %d: %v", tc.id, err)
		}
		if got := s.Image().Brokers[tc.id].Fenced; got != tc.wantFenced {
			t.Errorf("broker %d fenced = %v right after the report, want %v", tc.id, got, tc.wantFenced)
		}
	}
	if !s.sessions.suspected(1) {
		t.Error("broker 1 (listening) is not suspected after the report")
	}
}
