package features

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	local := Node{Name: "Local controller 1", Supported: Supported()}
	old := Node{Name: "broker 2"} // registered no ranges: Baseline
	narrow := Node{Name: "broker 3", Supported: map[string]Range{MetadataVersion: {1, 2}, KRaftVersion: {1, 1}, GroupVersion: {1, 1}}}
	atMV1 := Implied()
	atMV2 := map[string]int16{MetadataVersion: 2, KRaftVersion: 1, GroupVersion: 1}
	atMV3 := map[string]int16{MetadataVersion: 3, KRaftVersion: 1, GroupVersion: 1}
	withTxn := Bootstrap()
	withTxn[TransactionVersion] = 1

	tests := []struct {
		name      string
		updates   []Update
		finalized map[string]int16
		nodes     []Node
		want      []string // "" for nil, else a substring of the error
		writes    []Level
	}{
		{"upgrade metadata.version", []Update{{MetadataVersion, 2, Upgrade}}, atMV1, []Node{local},
			[]string{""}, []Level{{MetadataVersion, 2}}},
		{"same level writes nothing", []Update{{MetadataVersion, 2, Upgrade}}, atMV2, []Node{local},
			[]string{""}, nil},
		{"old broker blocks the upgrade", []Update{{MetadataVersion, 2, Upgrade}}, atMV1, []Node{local, old},
			[]string{"Invalid update version 2 for feature metadata.version. broker 2 only supports versions 1"}, nil},
		{"above this controller", []Update{{MetadataVersion, 6, Upgrade}}, atMV3, []Node{local},
			[]string{"Local controller 1 only supports versions 1-5"}, nil},
		{"upgrade to delegation tokens", []Update{{MetadataVersion, 4, Upgrade}}, atMV3, []Node{local},
			[]string{""}, []Level{{MetadataVersion, 4}}},
		{"metadata.version 4 to 3 loses metadata", []Update{{MetadataVersion, 3, SafeDowngrade}}, map[string]int16{MetadataVersion: 4, KRaftVersion: 1}, []Node{local},
			[]string{"Invalid metadata.version 3. Refusing to perform the requested downgrade"}, nil},
		{"upgrade to AlterPartition batches", []Update{{MetadataVersion, 3, Upgrade}}, atMV2, []Node{local},
			[]string{""}, []Level{{MetadataVersion, 3}}},
		{"a broker without AlterPartition batches blocks them", []Update{{MetadataVersion, 3, Upgrade}}, atMV2, []Node{local, narrow},
			[]string{"broker 3 only supports versions 1-2"}, nil},
		{"metadata.version 3 to 2 loses metadata", []Update{{MetadataVersion, 2, SafeDowngrade}}, atMV3, []Node{local},
			[]string{"Invalid metadata.version 2. Refusing to perform the requested downgrade"}, nil},
		{"unknown feature", []Update{{"foo.version", 1, Upgrade}}, atMV2, []Node{local},
			[]string{"Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."}, nil},
		{"unknown feature removed: nothing to do", []Update{{"foo.version", 0, SafeDowngrade}}, atMV2, []Node{local},
			[]string{""}, nil},
		{"negative level", []Update{{GroupVersion, -1, Upgrade}}, atMV2, []Node{local},
			[]string{"A feature version cannot be less than 0."}, nil},
		{"unknown upgrade type", []Update{{GroupVersion, 1, 0}}, atMV2, []Node{local},
			[]string{"The controller does not support the given upgrade type."}, nil},
		{"downgrade without a downgrade type", []Update{{GroupVersion, 0, Upgrade}}, atMV2, []Node{local},
			[]string{"Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."}, nil},
		{"downgrade type for an upgrade", []Update{{TransactionVersion, 1, SafeDowngrade}}, atMV2, []Node{local},
			[]string{"Can't downgrade to a newer version."}, nil},
		{"safe downgrade", []Update{{TransactionVersion, 0, SafeDowngrade}}, withTxn, []Node{local},
			[]string{""}, []Level{{TransactionVersion, 0}}},
		{"unsafe downgrade", []Update{{GroupVersion, 0, UnsafeDowngrade}}, atMV2, []Node{local},
			[]string{""}, []Level{{GroupVersion, 0}}},
		{"a broker's range blocks a downgrade", []Update{{GroupVersion, 0, SafeDowngrade}}, atMV2, []Node{local, narrow},
			[]string{"broker 3 only supports versions 1"}, nil},
		{"kraft.version is fixed", []Update{{KRaftVersion, 0, SafeDowngrade}}, atMV2, []Node{local},
			[]string{"Local controller 1 only supports versions 1"}, nil},
		{"metadata.version safe downgrade loses metadata", []Update{{MetadataVersion, 1, SafeDowngrade}}, atMV2, []Node{local},
			[]string{"Invalid metadata.version 1. Refusing to perform the requested downgrade because it might delete metadata information. Retry using UNSAFE_DOWNGRADE"}, nil},
		{"metadata.version unsafe downgrade", []Update{{MetadataVersion, 1, UnsafeDowngrade}}, atMV2, []Node{local},
			[]string{"Invalid metadata.version 1. Unsafe metadata downgrade is not supported in this version."}, nil},
		{"metadata.version 0", []Update{{MetadataVersion, 0, UnsafeDowngrade}}, atMV2, []Node{local},
			[]string{"Local controller 1 only supports versions 1-5"}, nil},
		{"other features need metadata.version 2", []Update{{TransactionVersion, 1, Upgrade}}, atMV1, []Node{local},
			[]string{"It requires metadata.version 2 or later, and the cluster is at 1."}, nil},
		{"metadata.version first in the same request", []Update{{TransactionVersion, 1, Upgrade}, {MetadataVersion, 2, Upgrade}}, atMV1, []Node{local},
			[]string{"", ""}, []Level{{MetadataVersion, 2}, {TransactionVersion, 1}}},
		{"one invalid, the other written", []Update{{GroupVersion, 2, Upgrade}, {TransactionVersion, 1, Upgrade}}, atMV2, []Node{local},
			[]string{"only supports versions 0-1", ""}, []Level{{TransactionVersion, 1}}},
		{"named twice", []Update{{TransactionVersion, 1, Upgrade}, {TransactionVersion, 0, SafeDowngrade}}, atMV2, []Node{local},
			[]string{"more than once", "more than once"}, nil},
		{"silent voter", []Update{{TransactionVersion, 1, Upgrade}}, atMV2, []Node{local, {Name: "controller 2", Silent: true}},
			[]string{"controller 2 did not answer, and may not support this feature."}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.finalized)
			errs, writes := Plan(tc.updates, tc.finalized, tc.nodes)
			if len(errs) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(errs), len(tc.want))
			}
			for i, err := range errs {
				switch {
				case tc.want[i] == "" && err != nil:
					t.Errorf("update %d: %v, want success", i, err)
				case tc.want[i] != "" && (err == nil || !strings.Contains(err.Error(), tc.want[i])):
					t.Errorf("update %d: %v, want %q", i, err, tc.want[i])
				case err != nil && !errors.Is(err, ErrInvalidUpdateVersion):
					t.Errorf("update %d: %v is not ErrInvalidUpdateVersion", i, err)
				}
			}
			if !equalLevels(writes, tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			if !maps.Equal(before, tc.finalized) {
				t.Errorf("Plan changed the finalized levels")
			}
		})
	}
}

func equalLevels(a, b []Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name      string
		finalized map[string]int16
		supported map[string]Range
		want      string
	}{
		{"implied levels on a build before feature levels", Implied(), nil, ""},
		{"bootstrap levels on this build", Bootstrap(), Supported(), ""},
		{"bootstrap levels on a build before feature levels", Bootstrap(), nil,
			"the cluster finalized metadata.version at level 5, and this build supports levels 1"},
		{"a level above this build", map[string]int16{MetadataVersion: 6}, Supported(),
			"the cluster finalized metadata.version at level 6, and this build supports levels 1-5"},
		{"an unknown feature", map[string]int16{MetadataVersion: 2, "share.version": 1}, Supported(),
			"the cluster finalized share.version at level 1, which this build does not know"},
		{"level 0 is not finalized", map[string]int16{MetadataVersion: 1, "share.version": 0}, Supported(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.finalized, tc.supported)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrUnsupportedFeature) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name      string
		finalized map[string]int16
		level     Level
		want      map[string]int16 // nil: refused
	}{
		{"first record on the implied levels", nil, Level{MetadataVersion, 2},
			map[string]int16{MetadataVersion: 2, KRaftVersion: 1, GroupVersion: 1}},
		{"level 0 removes a feature", Bootstrap(), Level{GroupVersion, 0},
			map[string]int16{MetadataVersion: 5, KRaftVersion: 1}},
		{"set a feature", Bootstrap(), Level{TransactionVersion, 1},
			map[string]int16{MetadataVersion: 5, KRaftVersion: 1, GroupVersion: 1, TransactionVersion: 1}},
		{"another feature at metadata.version 1", nil, Level{TransactionVersion, 1}, nil},
		{"metadata.version 0", Bootstrap(), Level{MetadataVersion, 0}, nil},
		{"no name", Bootstrap(), Level{"", 1}, nil},
		{"negative", Bootstrap(), Level{GroupVersion, -1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.finalized)
			got, err := Apply(tc.finalized, tc.level)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("applied: %v", got)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if !maps.Equal(before, tc.finalized) {
				t.Fatal("Apply changed its input")
			}
		})
	}
	if !maps.Equal(Implied(), map[string]int16{MetadataVersion: 1, KRaftVersion: 1, GroupVersion: 1}) {
		t.Fatal("Implied changed: it must stay what builds before feature levels ran")
	}
}

func TestRangeString(t *testing.T) {
	for r, want := range map[Range]string{{1, 2}: "1-2", {1, 1}: "1", {0, 1}: "0-1"} {
		if got := r.String(); got != want {
			t.Errorf("%v: %q, want %q", r, got, want)
		}
	}
}
