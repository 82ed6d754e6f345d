package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kbroker/kbroker/internal/testutil"
)

// WeedVersion is the SeaweedFS module version scripts/install-weed.sh
// builds.
const WeedVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// Store is a running weed S3 gateway and its bucket.
type Store struct {
	Endpoint  string // http://127.0.0.1:port
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string

	t     testing.TB
	bin   string
	dir   string
	ports []int
	cmd   *exec.Cmd
	out   *testutil.SyncBuffer
	done  chan struct{} // closed when cmd has exited
}

// Binary returns the weed binary: on PATH, or in $(go env GOPATH)/bin.
// It skips the test when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("weed"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = string(out[:len(out)-1])
		}
	}
	if gopath != "" {
		p := filepath.Join(gopath, "bin", "weed")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("SeaweedFS weed binary not found (on PATH or in $(go env GOPATH)/bin): run scripts/install-weed.sh to build " + WeedVersion)
	return ""
}

// The ports weed mini listens on.
const (
	portMaster = iota
	portMasterGrpc
	portVolume
	portVolumeGrpc
	portFiler
	portFilerGrpc
	portS3
	portS3Grpc
	numPorts
)

// Start starts weed mini with a bucket and waits until the bucket takes
// requests; the store is stopped when the test ends.
func Start(t testing.TB) *Store {
	t.Helper()
	s := &Store{t: t, bin: Binary(t), dir: t.TempDir(), Bucket: "kbroker-test", Region: "us-east-1",
		AccessKey: "kbrokertest", SecretKey: "kbroker-test-secret-key"}
	if err := s.writeConfig(); err != nil {
		t.Fatal(err)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		p := testutil.MustReservePorts(t, numPorts)
		s.ports = make([]int, numPorts)
		for i := range s.ports {
			s.ports[i] = p.Port(i)
		}
		p.MustRelease(t)
		if err = s.start(); err == nil {
			break
		}
		s.Stop()
		if !testutil.AddrInUse(nil, s.out.String()) {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting weed: %v\n%s", err, s.out.String())
	}
	t.Cleanup(s.Stop)
	return s
}

func (s *Store) writeConfig() error {
	cfg := map[string]any{"identities": []map[string]any{{
		"name":        "kbroker",
		"credentials": []map[string]string{{"accessKey": s.AccessKey, "secretKey": s.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "s3.json"), b, 0o600)
}

// start runs weed on s.ports and waits for the bucket.
func (s *Store) start() error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	port := func(i int) string { return strconv.Itoa(s.ports[i]) }
	s.out = &testutil.SyncBuffer{}
	s.cmd = exec.Command(s.bin, "mini",
		"-dir="+data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+port(portMaster), "-master.port.grpc="+port(portMasterGrpc),
		"-volume.port="+port(portVolume), "-volume.port.grpc="+port(portVolumeGrpc),
		"-filer.port="+port(portFiler), "-filer.port.grpc="+port(portFilerGrpc),
		"-s3.port="+port(portS3), "-s3.port.grpc="+port(portS3Grpc),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
		"-master.telemetry=false", "-s3.config="+filepath.Join(s.dir, "s3.json"),
	)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	s.Endpoint = "http://127.0.0.1:" + port(portS3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cli := s.Client()
	return testutil.Poll(ctx, 90*time.Second, func() error {
		select {
		case <-s.done:
			return testutil.Permanent(errors.New("weed exited"))
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		_, err := cli.CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)})
		var owned *types.BucketAlreadyOwnedByYou
		var exists *types.BucketAlreadyExists
		if err == nil || errors.As(err, &owned) || errors.As(err, &exists) {
			_, err = cli.HeadBucket(cctx, &s3.HeadBucketInput{Bucket: aws.String(s.Bucket)})
		}
		return err
	})
}

// Client is an S3 client of the store with the test identity.
func (s *Store) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: s.Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, nil
		}),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// Stop stops the store (an outage); its data stays for Restart.
func (s *Store) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the store again on the same ports and data.
func (s *Store) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("restarting weed: %v\n%s", err, s.out.String())
	}
}

// Log is weed's output so far.
func (s *Store) Log() string { return s.out.String() }

// Objects lists the bucket's keys under prefix.
func (s *Store) Objects(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(prefix)})
	for i := 0; p.HasMorePages() && i < 1000; i++ {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}
