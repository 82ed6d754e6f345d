package bench

// kbroker perf produce|consume: load generators in the spirit of Kafka's
// kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh, built on
// franz-go so they work against kbroker and any Kafka cluster.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/cliflag"
)

const mib = 1024 * 1024 // Kafka's tools report MB as MiB

// maxLatencySamples bounds the latencies kept for percentiles: 10M int64
// is 80 MB. Past it, samples are replaced by reservoir sampling.
const maxLatencySamples = 10_000_000

func perfUsage(w io.Writer) {
	fmt.Fprintln(w, `usage: kbroker perf produce --bootstrap-server H:P --topic T (--num-records N | --duration D) [flags]
       kbroker perf consume --bootstrap-server H:P --topic T (--num-records N | --duration D) [flags]

Run "kbroker perf produce --help" or "kbroker perf consume --help" for the flags.`)
}

// Perf runs "kbroker perf produce|consume". Flag errors exit 2, a run
// with failed records (or too few consumed) exits 1.
func Perf(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		perfUsage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "produce":
		cfg, err := parseProduceFlags(args[1:], stderr)
		if err != nil {
			return flagExit(err, "produce", stderr)
		}
		if err := runProduce(ctx, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "kbroker perf produce: %v\n", err)
			return 1
		}
		return 0
	case "consume":
		cfg, err := parseConsumeFlags(args[1:], stderr)
		if err != nil {
			return flagExit(err, "consume", stderr)
		}
		if err := runConsume(ctx, cfg, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "kbroker perf consume: %v\n", err)
			return 1
		}
		return 0
	case "help", "-h", "--help", "-help":
		perfUsage(stderr)
		return 0
	default:
		fmt.Fprintf(stderr, "kbroker perf: unknown subcommand %q\n", args[0])
		perfUsage(stderr)
		return 2
	}
}

func flagExit(err error, sub string, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var pe parseError
	if !errors.As(err, &pe) { // the flag package has already printed its own error
		fmt.Fprintf(stderr, "kbroker perf %s: %v\n", sub, err)
	}
	return 2
}

// parseError wraps an error the flag package already reported.
type parseError struct{ error }

func (e parseError) Unwrap() error { return e.error }

// flagErr is a validation error naming the flag.
func flagErr(name, format string, a ...any) error {
	return fmt.Errorf("--%s: %s", name, fmt.Sprintf(format, a...))
}

// ---------------------------------------------------------------- produce

type produceConfig struct {
	brokers           []string
	topic             string
	createTopic       bool
	partitions        int
	replicationFactor int
	recordSize        int
	numRecords        int64
	duration          time.Duration
	acks              kgo.Acks
	acksName          string
	linger            time.Duration
	batchSize         int
	compression       kgo.CompressionCodec
	compressionName   string
	idempotent        bool
	throughput        float64 // records/s; <= 0 is unlimited
	reportInterval    time.Duration
	maxBuffered       int
	deliveryTimeout   time.Duration
}

func parseProduceFlags(args []string, stderr io.Writer) (produceConfig, error) {
	fs := flag.NewFlagSet("perf produce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap-server", "", "comma-separated host:port of brokers to bootstrap from (required)")
	topic := fs.String("topic", "", "topic to produce to (required)")
	create := fs.Bool("create-topic", false, "create the topic first (an existing topic is fine)")
	partitions := fs.Int("partitions", -1, "partitions for --create-topic; -1 is the broker's num.partitions")
	rf := fs.Int("replication-factor", -1, "replication factor for --create-topic; -1 is the broker's default.replication.factor")
	recordSize := fs.Int("record-size", 100, "bytes in each record value")
	numRecords := fs.Int64("num-records", 0, "records to send (this or --duration)")
	duration := fs.Duration("duration", 0, "send for this long (this or --num-records)")
	acks := fs.String("acks", "all", "all (-1), 1 or 0")
	linger := fs.Duration("linger", 5*time.Millisecond, "how long a batch waits for more records")
	batchSize := fs.Int("batch-size", 1048576, "largest record batch in bytes")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	idempotent := fs.Bool("idempotent", true, "idempotent producer (needs --acks all; off by default with other acks)")
	throughput := fs.Float64("throughput", -1, "cap on records/sec; -1 is unlimited")
	reportInterval := fs.Duration("report-interval", 5*time.Second, "time between progress lines")
	maxBuffered := fs.Int("max-buffered-records", 10000, "records buffered in the client before Produce blocks")
	deliveryTimeout := fs.Duration("delivery-timeout", 2*time.Minute, "fail a record not acknowledged within this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kbroker perf produce --bootstrap-server H:P --topic T (--num-records N | --duration D) [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return produceConfig{}, parseError{err}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var c produceConfig
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.brokers = cliflag.Split(*bootstrap)
	if len(c.brokers) == 0 {
		return c, flagErr("bootstrap-server", "required")
	}
	if c.topic = *topic; c.topic == "" {
		return c, flagErr("topic", "required")
	}
	c.createTopic = *create
	if *partitions == 0 || *partitions < -1 || *partitions > math.MaxInt32 {
		return c, flagErr("partitions", "must be positive or -1, got %d", *partitions)
	}
	if *rf == 0 || *rf < -1 || *rf > math.MaxInt16 {
		return c, flagErr("replication-factor", "must be positive or -1, got %d", *rf)
	}
	if !c.createTopic && (set["partitions"] || set["replication-factor"]) {
		return c, errors.New("--partitions and --replication-factor need --create-topic")
	}
	c.partitions, c.replicationFactor = *partitions, *rf
	if c.recordSize = *recordSize; c.recordSize <= 0 {
		return c, flagErr("record-size", "must be positive, got %d", c.recordSize)
	}
	c.numRecords, c.duration = *numRecords, *duration
	if err := checkAmount(c.numRecords, c.duration); err != nil {
		return c, err
	}
	c.acksName = strings.ToLower(*acks)
	switch c.acksName {
	case "all", "-1":
		c.acks, c.acksName = kgo.AllISRAcks(), "all"
	case "1":
		c.acks = kgo.LeaderAck()
	case "0":
		c.acks = kgo.NoAck()
	default:
		return c, flagErr("acks", "must be all, -1, 1 or 0, got %q", *acks)
	}
	if c.linger = *linger; c.linger < 0 {
		return c, flagErr("linger", "must not be negative, got %v", c.linger)
	}
	if c.batchSize = *batchSize; c.batchSize <= 0 || c.batchSize > math.MaxInt32 {
		return c, flagErr("batch-size", "must be positive, got %d", c.batchSize)
	}
	c.compressionName = strings.ToLower(*compression)
	switch c.compressionName {
	case "none", "uncompressed":
		c.compression, c.compressionName = kgo.NoCompression(), "none"
	case "gzip":
		c.compression = kgo.GzipCompression()
	case "snappy":
		c.compression = kgo.SnappyCompression()
	case "lz4":
		c.compression = kgo.Lz4Compression()
	case "zstd":
		c.compression = kgo.ZstdCompression()
	default:
		return c, flagErr("compression", "must be none, gzip, snappy, lz4 or zstd, got %q", *compression)
	}
	c.idempotent = *idempotent
	if c.acksName != "all" {
		if set["idempotent"] && c.idempotent {
			return c, flagErr("idempotent", "needs --acks all, got --acks %s", c.acksName)
		}
		c.idempotent = false // as Kafka's default enable.idempotence does
	}
	if c.throughput = *throughput; c.throughput == 0 || (c.throughput < 0 && c.throughput != -1) || math.IsNaN(c.throughput) {
		return c, flagErr("throughput", "must be positive or -1, got %v", *throughput)
	}
	if c.reportInterval = *reportInterval; c.reportInterval <= 0 {
		return c, flagErr("report-interval", "must be positive, got %v", c.reportInterval)
	}
	if c.maxBuffered = *maxBuffered; c.maxBuffered <= 0 {
		return c, flagErr("max-buffered-records", "must be positive, got %d", c.maxBuffered)
	}
	if c.deliveryTimeout = *deliveryTimeout; c.deliveryTimeout <= 0 {
		return c, flagErr("delivery-timeout", "must be positive, got %v", c.deliveryTimeout)
	}
	return c, nil
}

// produceStats is shared between the send loop, the promises and the
// reporter.
type produceStats struct {
	mu sync.Mutex
	// whole run
	count, bytes, failed int64
	latSum, latMax       time.Duration
	firstErr             error
	samples              reservoir
	// current reporting window
	wStart           time.Time
	wCount, wBytes   int64
	wLatSum, wLatMax time.Duration
}

func (s *produceStats) record(lat time.Duration, size int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.count++
	s.bytes += int64(size)
	s.latSum += lat
	s.latMax = max(s.latMax, lat)
	s.samples.add(int64(lat))
	s.wCount++
	s.wBytes += int64(size)
	s.wLatSum += lat
	s.wLatMax = max(s.wLatMax, lat)
}

// window prints the progress line for the window ending now and starts
// the next one.
func (s *produceStats) window(w io.Writer, now time.Time) {
	s.mu.Lock()
	n, b, sum, mx, start := s.wCount, s.wBytes, s.wLatSum, s.wLatMax, s.wStart
	s.wStart, s.wCount, s.wBytes, s.wLatSum, s.wLatMax = now, 0, 0, 0, 0
	s.mu.Unlock()
	secs := now.Sub(start).Seconds()
	fmt.Fprintf(w, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
		n, rate(float64(n), secs), rate(float64(b)/mib, secs), avgMs(sum, n), ms(mx))
}

func rate(v, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return v / secs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func avgMs(sum time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return ms(sum) / float64(n)
}

// produceSummary formats the final line the way kafka-producer-perf-test
// does, with fractional milliseconds for the percentiles.
func produceSummary(count, bytes int64, elapsed time.Duration, latSum, latMax time.Duration, pcts []int64) string {
	secs := elapsed.Seconds()
	p := make([]float64, 4)
	for i := range p {
		if i < len(pcts) {
			p[i] = ms(time.Duration(pcts[i]))
		}
	}
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.",
		count, rate(float64(count), secs), rate(float64(bytes)/mib, secs), avgMs(latSum, count), ms(latMax), p[0], p[1], p[2], p[3])
}

// payload is Kafka's kind of value: random upper-case letters, so that
// compression has something to do without being trivial.
func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('A' + rand.IntN(26))
	}
	return b
}

func runProduce(ctx context.Context, c produceConfig, stdout io.Writer) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RequiredAcks(c.acks),
		kgo.ProducerLinger(c.linger),
		kgo.ProducerBatchMaxBytes(int32(c.batchSize)),
		kgo.ProducerBatchCompression(c.compression),
		kgo.MaxBufferedRecords(c.maxBuffered),
		kgo.RecordDeliveryTimeout(c.deliveryTimeout),
		kgo.AllowAutoTopicCreation(),
	}
	if !c.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	if c.createTopic {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := kadm.NewClient(cl).CreateTopic(cctx, int32(c.partitions), int16(c.replicationFactor), nil, c.topic)
		cancel()
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", c.topic, err)
		}
	}

	value := payload(c.recordSize)
	stats := &produceStats{samples: reservoir{max: maxLatencySamples}}
	start := time.Now()
	stats.wStart = start

	done := make(chan struct{})
	var reporter sync.WaitGroup
	reporter.Go(func() {
		t := time.NewTicker(c.reportInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				stats.window(stdout, now)
			}
		}
	})

	var deadline time.Time
	if c.duration > 0 {
		deadline = start.Add(c.duration)
	}
	var sent int64
	for c.numRecords == 0 || sent < c.numRecords {
		if ctx.Err() != nil {
			break
		}
		if c.throughput > 0 || !deadline.IsZero() {
			now := time.Now()
			if !deadline.IsZero() && !now.Before(deadline) {
				break
			}
			if c.throughput > 0 {
				// Sleep while ahead of the schedule sent/throughput.
				if ahead := time.Duration(float64(sent)/c.throughput*float64(time.Second)) - now.Sub(start); ahead > time.Millisecond {
					select {
					case <-time.After(ahead):
					case <-ctx.Done():
					}
					continue
				}
			}
		}
		r := &kgo.Record{Value: value}
		t0 := time.Now()
		// Background, not ctx: an interrupt stops the loop, and what was
		// handed to the client is still flushed and counted.
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			stats.record(time.Since(t0), len(r.Value), err)
		})
		sent++
	}
	if err := cl.Flush(context.Background()); err != nil {
		return err
	}
	elapsed := time.Since(start)
	close(done)
	reporter.Wait()

	stats.mu.Lock()
	defer stats.mu.Unlock()
	pcts := percentiles(stats.samples.values, []float64{0.50, 0.95, 0.99, 0.999})
	fmt.Fprintln(stdout, produceSummary(stats.count, stats.bytes, elapsed, stats.latSum, stats.latMax, pcts))
	if stats.failed > 0 {
		return fmt.Errorf("%d of %d records failed; first error: %w", stats.failed, sent, stats.firstErr)
	}
	return ctx.Err()
}

// reservoir keeps every value until it holds max of them, then a uniform
// random sample of max values out of all those added (Vitter's algorithm R).
type reservoir struct {
	max    int
	seen   int64
	values []int64
}

func (r *reservoir) add(v int64) {
	r.seen++
	if len(r.values) < r.max {
		r.values = append(r.values, v)
		return
	}
	if j := rand.Int64N(r.seen); j < int64(r.max) {
		r.values[j] = v
	}
}

// percentiles sorts samples in place and returns, for each p in ps (0 < p
// <= 1), the nearest-rank percentile: the smallest sample with at least
// p of all samples at or below it. Empty samples give zeros.
func percentiles(samples []int64, ps []float64) []int64 {
	out := make([]int64, len(ps))
	n := len(samples)
	if n == 0 {
		return out
	}
	slices.Sort(samples)
	for i, p := range ps {
		rank := int(math.Ceil(p * float64(n))) // 1-based
		rank = min(max(rank, 1), n)
		out[i] = samples[rank-1]
	}
	return out
}

// ---------------------------------------------------------------- consume

type consumeConfig struct {
	brokers        []string
	topic          string
	group          string
	numRecords     int64
	duration       time.Duration
	timeout        time.Duration
	reportInterval time.Duration
}

func parseConsumeFlags(args []string, stderr io.Writer) (consumeConfig, error) {
	fs := flag.NewFlagSet("perf consume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap-server", "", "comma-separated host:port of brokers to bootstrap from (required)")
	topic := fs.String("topic", "", "topic to consume (required)")
	group := fs.String("group", "", "consume as a member of this group (committed offsets, else the start); empty reads every partition from the start")
	numRecords := fs.Int64("num-records", 0, "records to consume (this or --duration)")
	duration := fs.Duration("duration", 0, "consume for this long (this or --num-records)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up when no record arrives for this long")
	reportInterval := fs.Duration("report-interval", 5*time.Second, "time between progress lines (on stderr)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kbroker perf consume --bootstrap-server H:P --topic T (--num-records N | --duration D) [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return consumeConfig{}, parseError{err}
	}
	var c consumeConfig
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.brokers = cliflag.Split(*bootstrap); len(c.brokers) == 0 {
		return c, flagErr("bootstrap-server", "required")
	}
	if c.topic = *topic; c.topic == "" {
		return c, flagErr("topic", "required")
	}
	c.group = *group
	c.numRecords, c.duration = *numRecords, *duration
	if err := checkAmount(c.numRecords, c.duration); err != nil {
		return c, err
	}
	if c.timeout = *timeout; c.timeout <= 0 {
		return c, flagErr("timeout", "must be positive, got %v", c.timeout)
	}
	if c.reportInterval = *reportInterval; c.reportInterval <= 0 {
		return c, flagErr("report-interval", "must be positive, got %v", c.reportInterval)
	}
	return c, nil
}

// kafkaTime formats t as kafka-consumer-perf-test does: yyyy-MM-dd
// HH:mm:ss:SSS (Go layouts cannot put milliseconds after a colon).
func kafkaTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}

const consumeHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"

func consumeSummary(start, end time.Time, count, bytes int64) string {
	secs := end.Sub(start).Seconds()
	mb := float64(bytes) / mib
	return fmt.Sprintf("%s, %s, %.4f, %.4f, %d, %.4f",
		kafkaTime(start), kafkaTime(end), mb, rate(mb, secs), count, rate(float64(count), secs))
}

// runConsume prints progress lines on stderr and the CSV header and values
// on stdout, so stdout alone is a clean CSV.
func runConsume(ctx context.Context, c consumeConfig, stdout, stderr io.Writer) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if c.group != "" {
		opts = append(opts, kgo.ConsumerGroup(c.group))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	start := time.Now()
	end := start
	lastRecord := start
	var count, bytes int64
	var winCount, winBytes int64
	winStart := start
	var firstErr error
	var deadline time.Time
	if c.duration > 0 {
		deadline = start.Add(c.duration)
	}
	var stopReason string
loop:
	for c.numRecords == 0 || count < c.numRecords {
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			break
		}
		// Poll at most until the next of: report, idle timeout, deadline.
		wait := min(c.reportInterval-now.Sub(winStart), c.timeout-now.Sub(lastRecord))
		if !deadline.IsZero() {
			wait = min(wait, deadline.Sub(now))
		}
		pctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			stopReason = "interrupted"
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if firstErr == nil {
				firstErr = err
				if t != "" {
					firstErr = fmt.Errorf("topic %s partition %d: %w", t, p, err)
				}
				fmt.Fprintf(stderr, "kbroker perf consume: fetch error: %v\n", firstErr)
			}
		})
		n := int64(0)
		iter := fetches.RecordIter()
		for !iter.Done() {
			r := iter.Next()
			count++
			n++
			size := int64(len(r.Key) + len(r.Value))
			bytes += size
			winCount++
			winBytes += size
			if c.numRecords > 0 && count >= c.numRecords {
				break
			}
		}
		now = time.Now()
		if n > 0 {
			lastRecord, end = now, now
		}
		if now.Sub(winStart) >= c.reportInterval {
			secs := now.Sub(winStart).Seconds()
			fmt.Fprintf(stderr, "%d records consumed, %.1f records/sec (%.2f MB/sec), %d total.\n",
				winCount, rate(float64(winCount), secs), rate(float64(winBytes)/mib, secs), count)
			winStart, winCount, winBytes = now, 0, 0
		}
		if now.Sub(lastRecord) >= c.timeout {
			stopReason = fmt.Sprintf("no record for %v (--timeout)", c.timeout)
			break loop
		}
	}
	if c.duration > 0 || count == 0 {
		end = time.Now()
	}
	fmt.Fprintln(stdout, consumeHeader)
	fmt.Fprintln(stdout, consumeSummary(start, end, count, bytes))
	if c.numRecords > 0 && count < c.numRecords {
		msg := fmt.Sprintf("consumed %d of %d records", count, c.numRecords)
		if stopReason != "" {
			msg += ": " + stopReason
		}
		if firstErr != nil {
			return fmt.Errorf("%s; first fetch error: %w", msg, firstErr)
		}
		return errors.New(msg)
	}
	return nil
}

// checkAmount validates --num-records and --duration: exactly one of
// them, and not negative.
func checkAmount(numRecords int64, duration time.Duration) error {
	switch {
	case numRecords < 0:
		return flagErr("num-records", "must be positive, got %d", numRecords)
	case duration < 0:
		return flagErr("duration", "must be positive, got %v", duration)
	case numRecords == 0 && duration == 0:
		return errors.New("one of --num-records or --duration is required")
	case numRecords > 0 && duration > 0:
		return errors.New("--num-records and --duration are exclusive")
	}
	return nil
}
