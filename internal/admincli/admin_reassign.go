package admincli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
)

// reassign --generate is kafka-reassign-partitions.sh --generate: a
// balanced placement of the topics' partitions on the brokers given,
// printed in Kafka's reassignment JSON next to the current one.

// reassignment is Kafka's reassignment JSON document.
type reassignment struct {
	Version    int                     `json:"version"`
	Partitions []reassignmentPartition `json:"partitions"`
}

type reassignmentPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs"`
}

func newReassignmentPartition(topic string, p int32, replicas []int32) reassignmentPartition {
	dirs := make([]string, len(replicas))
	for i := range dirs {
		dirs[i] = "any"
	}
	return reassignmentPartition{topic, p, slices.Clone(replicas), dirs}
}

func reassignCmd() adminCommand {
	var generate bool
	var execute, verify, cancelFile string
	var brokerList string
	var topics commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&generate, "generate", false, "print a balanced plan for --topics on --brokers")
			fs.StringVar(&brokerList, "brokers", "", "the brokers to place replicas on: 1,2,3")
			fs.Var(&topics, "topics", "the topics to move: t1,t2")
			fs.StringVar(&execute, "execute", "", "start the reassignments of this plan file (Kafka's JSON)")
			fs.StringVar(&verify, "verify", "", "report whether the reassignments of this plan file are done")
			fs.StringVar(&cancelFile, "cancel", "", "cancel the reassignments of this plan file in progress")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			modes := 0
			for _, m := range []bool{generate, execute != "", verify != "", cancelFile != ""} {
				if m {
					modes++
				}
			}
			if modes != 1 {
				return usagef("exactly one of --generate, --execute FILE, --verify FILE, --cancel FILE is required")
			}
			switch {
			case execute != "":
				return reassignExecute(ctx, a, execute)
			case verify != "":
				return reassignVerify(ctx, a, verify)
			case cancelFile != "":
				return reassignCancel(ctx, a, cancelFile)
			}
			brokers, err := list32(brokerList)
			if err != nil || len(brokers) == 0 {
				return usagef("--brokers must list broker ids: %v", err)
			}
			if len(topics) == 0 {
				return usagef("--topics is required")
			}
			known, err := a.adm.ListBrokers(ctx)
			if err != nil {
				return err
			}
			for _, b := range brokers {
				if !slices.Contains(known.NodeIDs(), b) {
					return fmt.Errorf("broker %d is not a registered, unfenced broker", b)
				}
			}
			details, err := a.adm.ListTopics(ctx, topics...)
			if err != nil {
				return err
			}
			current := map[string][][]int32{}
			for _, t := range topics {
				d, ok := details[t]
				if !ok {
					return fmt.Errorf("topic %s: not in the cluster's metadata", t)
				}
				if d.Err != nil {
					return fmt.Errorf("topic %s: %w", t, d.Err)
				}
				ps := make([][]int32, len(d.Partitions))
				for _, p := range d.Partitions {
					if int(p.Partition) >= len(ps) || p.Partition < 0 {
						return fmt.Errorf("topic %s: partition %d of %d", t, p.Partition, len(ps))
					}
					ps[p.Partition] = p.Replicas
				}
				current[t] = ps
			}
			proposed, err := balancedPlan(current, brokers)
			if err != nil {
				return err
			}
			cur := reassignment{Version: 1, Partitions: []reassignmentPartition{}}
			for _, t := range slices.Sorted(maps.Keys(current)) {
				for p, r := range current[t] {
					cur.Partitions = append(cur.Partitions, newReassignmentPartition(t, int32(p), r))
				}
			}
			if a.json {
				return a.emit(map[string]reassignment{"current": cur, "proposed": proposed}, nil, nil)
			}
			c, _ := json.Marshal(cur)
			p, _ := json.Marshal(proposed)
			_, err = fmt.Fprintf(a.out, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", c, p)
			return err
		},
	}
}

// balancedPlan places every partition of the topics (their current
// replicas by partition; the replication factor is kept) on brokers:
// replica r of the k-th partition planned goes to brokers[(k+r) mod n].
// Counting k across topics spreads leaders (replica 0) and replicas
// evenly: no broker gets more than one more leader or replica than
// another.
func balancedPlan(current map[string][][]int32, brokers []int32) (reassignment, error) {
	brokers = slices.Sorted(slices.Values(brokers))
	brokers = slices.Compact(brokers)
	plan := reassignment{Version: 1, Partitions: []reassignmentPartition{}}
	k := 0
	for _, t := range slices.Sorted(maps.Keys(current)) {
		for p, replicas := range current[t] {
			rf := len(replicas)
			if rf > len(brokers) {
				return plan, fmt.Errorf("%s-%d has %d replicas, more than the %d brokers given", t, p, rf, len(brokers))
			}
			target := make([]int32, rf)
			for r := range target {
				target[r] = brokers[(k+r)%len(brokers)]
			}
			k++
			plan.Partitions = append(plan.Partitions, newReassignmentPartition(t, int32(p), target))
		}
	}
	return plan, nil
}
