package itest

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kbroker healthcheck, run with the broker's own configuration, succeeds
// while it serves and fails once it is gone; the admin listener serves
// /metrics, /healthz and /readyz.
func TestHealthcheckAndAdminEndpoints(t *testing.T) {
	b := startBroker(t, t.TempDir(), "admin.listener="+spareAddr)
	admin := b.spare

	check := func() (string, error) {
		// Same flags as serve, minus the command and log flags.
		args := []string{"healthcheck", "--timeout", "3s"}
		for i := 1; i < len(b.args); i++ {
			if b.args[i] == "--set" {
				args = append(args, "--set", b.args[i+1])
				i++
			}
		}
		out, err := exec.Command(brokerBin, args...).CombinedOutput()
		return string(out), err
	}
	if out, err := check(); err != nil {
		t.Fatalf("healthcheck of a running broker: %v\n%s", err, out)
	}

	get := func(path string) (int, string) {
		t.Helper()
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	code, body := get("/metrics")
	for _, m := range []string{"kbroker_requests_total", `kbroker_raft_state{state="Leader"} 1`,
		`kbroker_purgatory_size{purgatory="fetch"}`, "kbroker_under_replicated_partitions 0", `kbroker_brokers{state="unfenced"} 1`} {
		if code != 200 || !strings.Contains(body, m) {
			t.Fatalf("/metrics: %d, %s missing", code, m)
		}
	}

	b.kill9()
	if out, err := check(); err == nil {
		t.Fatalf("healthcheck of a dead broker succeeded:\n%s", out)
	}
}
