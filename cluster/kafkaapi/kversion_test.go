package kafkaapi

import (
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kafka4 is the Kafka release whose API table kbroker must match: the
// first 4.x, as franz-go's kversion lists it.
func kafka4() *kversion.Versions { return kversion.V4_0_0() }

// versionGap is an API of Kafka 4.0 that kbroker deliberately serves below
// Kafka's maximum, or not at all.
type versionGap struct {
	why string
	// elsewhere marks work under way on another branch: once it lands,
	// the entry goes stale and is only logged, so the merge does not
	// break this test; remove the entry then.
	elsewhere bool
}

// kafka4Gaps is the allow-list: every other Kafka 4.0 API must be served
// up to Kafka's maximum version.
var kafka4Gaps = map[int16]versionGap{
	71: {"GetTelemetrySubscriptions: not advertised, as a Kafka broker without a client telemetry plugin does not advertise it (docs/ARCHITECTURE.md)", false},
	72: {"PushTelemetry: not advertised, as a Kafka broker without a client telemetry plugin does not advertise it (docs/ARCHITECTURE.md)", false},
}

// The registry serves every Kafka 4.0 API up to Kafka's maximum, but for
// the allow-listed gaps.
func TestRegistryMatchesKafka4(t *testing.T) {
	kafka4().EachMaxKeyVersion(func(key, kafkaMax int16) {
		spec, ok := registry[key]
		gap, allowed := kafka4Gaps[key]
		switch {
		case ok && spec.max >= kafkaMax && allowed && gap.elsewhere:
			t.Logf("%s (key %d) reaches Kafka 4.0's v%d: remove it from kafka4Gaps", kmsg.NameForKey(key), key, kafkaMax)
		case ok && spec.max >= kafkaMax && allowed:
			t.Errorf("%s (key %d) reaches Kafka 4.0's v%d but is listed as a gap: %s", kmsg.NameForKey(key), key, kafkaMax, gap.why)
		case ok && spec.max >= kafkaMax, allowed:
		case !ok:
			t.Errorf("%s (key %d) is not served; Kafka 4.0 serves v%d", kmsg.NameForKey(key), key, kafkaMax)
		default:
			t.Errorf("%s (key %d) stops at v%d; Kafka 4.0 serves v%d", kmsg.NameForKey(key), key, spec.max, kafkaMax)
		}
	})
	for key := range kafka4Gaps {
		if _, ok := kafka4().LookupMaxKeyVersion(key); !ok {
			t.Errorf("kafka4Gaps lists key %d, which Kafka 4.0 does not have", key)
		}
	}
}

var guessedVersion = regexp.MustCompile(`^(?:at least )?v(\d+)\.(\d+)$`)

// A client guessing the Kafka version from kbroker's ApiVersions answer
// (kadm's and kcl's "broker version") finds Kafka 4.0 or later once the
// allow-listed gaps are left out, and the APIs already served beyond 4.0
// (which no single later release matches, since kbroker does not have all
// of 4.1 either).
func TestApiVersionsGuessKafka4(t *testing.T) {
	srv := server.New(testutil.Logger(t), (&Handlers{}).APIs(), defaultServerConfig(), server.NewMetrics())
	resp := srv.APIVersions(4)
	guess := kversion.FromApiVersionsResponse(resp).VersionGuess(kversion.SkipKeys(guessSkipKeys()...))
	m := guessedVersion.FindStringSubmatch(guess)
	if m == nil {
		t.Fatalf("kversion guesses %q, want Kafka 4.0 or later", guess)
	}
	major, _ := strconv.Atoi(m[1])
	if major < 4 {
		t.Fatalf("kversion guesses %q, want Kafka 4.0 or later", guess)
	}
	t.Logf("kversion guesses %s", guess)
}

// guessSkipKeys are the allow-listed gaps and the keys served beyond
// Kafka 4.0's maximum.
func guessSkipKeys() []int16 {
	keys := make([]int16, 0, len(kafka4Gaps))
	for k := range kafka4Gaps {
		keys = append(keys, k)
	}
	for k, spec := range registry {
		// Served beyond Kafka 4.0: a higher version, or a key 4.0 does not
		// serve (the share group APIs of 4.1 and 4.2).
		if v, ok := kafka4().LookupMaxKeyVersion(k); !ok || spec.max > v {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
