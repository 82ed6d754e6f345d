package group

// The server-side assignors of consumer groups (group.consumer.assignors).
//
//   - uniform: every partition of the subscribed topics goes to one of its
//     subscribers, the counts differ by at most one between members that
//     could take each other's partitions, and partitions stay where the
//     previous target put them whenever balance allows (Kafka's
//     UniformAssignor; ours balances by moving one partition at a time from
//     the most to the least loaded eligible member, which gives the same
//     balance but not necessarily the same placement).
//   - range: per topic, its subscribers sorted by instance id (else member
//     id) get contiguous ranges, the first ones one partition more when
//     the count does not divide (Kafka's RangeAssignor without its
//     stickiness and rack awareness).

import (
	"cmp"
	"slices"
)

// AssignorMember is one member as an assignor sees it.
type AssignorMember struct {
	ID, InstanceID string
	Topics         []TopicInfo // the existing topics it subscribes to
	Previous       Assignment  // its previous target
}

// Assign computes the target assignment of every member with the named
// assignor (uniform when the name is unknown).
func Assign(name string, members []AssignorMember) map[string]Assignment {
	if name == "range" {
		return assignRange(members)
	}
	return assignUniform(members)
}

type tp struct {
	t TopicID
	p int32
}

func assignUniform(members []AssignorMember) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	subscribers := map[TopicID][]int{} // member indexes, in member order
	parts := map[TopicID]int32{}
	for i, m := range members {
		out[m.ID] = Assignment{}
		for _, t := range m.Topics {
			subscribers[t.ID] = append(subscribers[t.ID], i)
			parts[t.ID] = t.Partitions
		}
	}
	owner := map[tp]int{}
	counts := make([]int, len(members))
	subscribed := func(i int, t TopicID) bool { return slices.Contains(subscribers[t], i) }
	// Keep the previous target where still valid.
	for i, m := range members {
		for t, ps := range m.Previous {
			if !subscribed(i, t) {
				continue
			}
			for _, p := range ps {
				k := tp{t, p}
				if _, taken := owner[k]; taken || p >= parts[t] {
					continue
				}
				owner[k] = i
				counts[i]++
			}
		}
	}
	ids := slices.SortedFunc(func(yield func(TopicID) bool) {
		for t := range parts {
			if !yield(t) {
				return
			}
		}
	}, compareIDs)
	var all []tp
	for _, t := range ids {
		for p := range parts[t] {
			all = append(all, tp{t, p})
		}
	}
	least := func(cands []int) int {
		best := cands[0]
		for _, i := range cands[1:] {
			if counts[i] < counts[best] {
				best = i
			}
		}
		return best
	}
	for _, k := range all {
		if _, ok := owner[k]; ok {
			continue
		}
		i := least(subscribers[k.t])
		owner[k] = i
		counts[i]++
	}
	// Balance: move a partition from a member to an eligible one holding at
	// least two fewer, until none can move. Each move lowers the sum of
	// squared counts, so this ends.
	for moved := true; moved; {
		moved = false
		for _, k := range all {
			from := owner[k]
			to := least(subscribers[k.t])
			if counts[from]-counts[to] >= 2 {
				owner[k] = to
				counts[from]--
				counts[to]++
				moved = true
			}
		}
	}
	for _, k := range all {
		out[members[owner[k]].ID].add(k.t, k.p)
	}
	return out
}

func assignRange(members []AssignorMember) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	subscribers := map[TopicID][]AssignorMember{}
	parts := map[TopicID]int32{}
	for _, m := range members {
		out[m.ID] = Assignment{}
		for _, t := range m.Topics {
			subscribers[t.ID] = append(subscribers[t.ID], m)
			parts[t.ID] = t.Partitions
		}
	}
	key := func(m AssignorMember) string {
		if m.InstanceID != "" {
			return m.InstanceID
		}
		return m.ID
	}
	for t, subs := range subscribers {
		slices.SortFunc(subs, func(a, b AssignorMember) int {
			return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID))
		})
		n := int32(len(subs))
		per, extra := parts[t]/n, parts[t]%n
		start := int32(0)
		for i, m := range subs {
			size := per
			if int32(i) < extra {
				size++
			}
			for p := start; p < start+size; p++ {
				out[m.ID].add(t, p)
			}
			start += size
		}
	}
	return out
}
