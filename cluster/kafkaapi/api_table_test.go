package kafkaapi

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// advertisedAPIs is the ApiVersions table, written out: changing a
// version range, adding or removing an API is a deliberate edit here.
var advertisedAPIs = map[int16][2]int16{
	0: {0, 13}, 1: {4, 18}, 2: {1, 10}, 3: {0, 13},
	8: {2, 10}, 9: {1, 10}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6}, 16: {0, 5},
	17: {0, 1}, 18: {0, 4}, 19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 22: {0, 5}, 23: {0, 4}, 24: {0, 5}, 25: {0, 4},
	26: {0, 5}, 27: {0, 1}, 28: {0, 5}, 29: {0, 3}, 30: {0, 3}, 31: {0, 3}, 32: {1, 4}, 33: {0, 2}, 34: {0, 2},
	35: {0, 4}, 36: {0, 2}, 37: {0, 3},
	38: {1, 3}, 39: {1, 2}, 40: {1, 2}, 41: {1, 3},
	42: {0, 3}, 43: {0, 2}, 44: {0, 1}, 45: {0, 1}, 46: {0, 0}, 47: {0, 0}, 48: {0, 1}, 49: {0, 1}, 50: {0, 0},
	51: {0, 0}, 55: {0, 2}, 57: {0, 2}, 60: {0, 2}, 61: {0, 0}, 64: {0, 0}, 65: {0, 0}, 66: {0, 2}, 68: {0, 1},
	69: {0, 1}, 74: {0, 1}, 75: {0, 0}, 76: {1, 1}, 77: {0, 1}, 78: {1, 2}, 79: {1, 2}, 80: {0, 0}, 81: {0, 0},
	83: {0, 0}, 84: {0, 0}, 85: {0, 1}, 86: {0, 0}, 87: {0, 1}, 90: {0, 1}, 91: {0, 0}, 92: {0, 0},
}

func TestAdvertisedAPIsAreTheExpectedList(t *testing.T) {
	got := map[int16][2]int16{}
	for key, spec := range registry {
		got[key] = [2]int16{spec.min, spec.max}
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if want, ok := advertisedAPIs[key]; !ok {
			t.Errorf("%s (key %d) v%d–%d is registered but not in advertisedAPIs", kmsg.NameForKey(key), key, got[key][0], got[key][1])
		} else if want != got[key] {
			t.Errorf("%s (key %d) is registered as v%d–%d, advertisedAPIs says v%d–%d", kmsg.NameForKey(key), key, got[key][0], got[key][1], want[0], want[1])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(advertisedAPIs)) {
		if _, ok := got[key]; !ok {
			t.Errorf("%s (key %d) is in advertisedAPIs but not registered", kmsg.NameForKey(key), key)
		}
	}
}

// kafka41Gaps are the APIs of Kafka 4.1's broker table that kbroker
// serves below Kafka 4.1's maximum, or not at all. elsewhere marks work
// on another branch, as in kafka4Gaps.
var kafka41Gaps = map[int16]versionGap{
	71: kafka4Gaps[71],
	72: kafka4Gaps[72],
}

// Against Kafka 4.1's table: every API up to 4.1's maximum but the
// listed gaps. The test logs the comparison, so its output is the list
// of what is missing.
func TestRegistryVsKafka41(t *testing.T) {
	kafka41 := kversion.V4_1_0()
	kafka41.EachMaxKeyVersion(func(key, kafkaMax int16) {
		spec, ok := registry[key]
		gap, allowed := kafka41Gaps[key]
		switch {
		case ok && spec.max >= kafkaMax && allowed && gap.elsewhere:
			t.Logf("%s (key %d) reaches Kafka 4.1's v%d: remove it from kafka41Gaps", kmsg.NameForKey(key), key, kafkaMax)
		case ok && spec.max >= kafkaMax && allowed:
			t.Errorf("%s (key %d) reaches Kafka 4.1's v%d but is listed as a gap: %s", kmsg.NameForKey(key), key, kafkaMax, gap.why)
		case ok && spec.max >= kafkaMax:
		case allowed:
			have := "not served"
			if ok {
				have = fmt.Sprintf("served to v%d", spec.max)
			}
			t.Logf("gap: %s (key %d): Kafka 4.1 v%d, kbroker %s: %s", kmsg.NameForKey(key), key, kafkaMax, have, gap.why)
		case !ok:
			t.Errorf("%s (key %d) is not served; Kafka 4.1 serves v%d", kmsg.NameForKey(key), key, kafkaMax)
		default:
			t.Errorf("%s (key %d) stops at v%d; Kafka 4.1 serves v%d", kmsg.NameForKey(key), key, spec.max, kafkaMax)
		}
	})
	for key := range kafka41Gaps {
		if _, ok := kafka41.LookupMaxKeyVersion(key); !ok {
			t.Errorf("kafka41Gaps lists key %d, which Kafka 4.1 does not have", key)
		}
	}
}
