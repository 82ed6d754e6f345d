package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// elect-leaders (kafka-leader-election.sh) and log-dirs describe
// (kafka-log-dirs.sh).

func electLeadersCmd() adminCommand {
	var preferred, unclean bool
	var topic string
	var partition int
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&preferred, "preferred", false, "move leadership back to each partition's first replica")
			fs.BoolVar(&unclean, "unclean", false, "elect a leader for partitions without one, from outside the ISR if need be (may lose acknowledged records)")
			fs.StringVar(&topic, "topic", "", "only this topic (absent: every partition)")
			fs.IntVar(&partition, "partition", -1, "only this partition of --topic")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if preferred == unclean {
				return usagef("exactly one of --preferred and --unclean is required")
			}
			if partition >= 0 && topic == "" {
				return usagef("--partition needs --topic")
			}
			how := kadm.ElectPreferredReplica
			if unclean {
				how = kadm.ElectLiveReplica
			}
			var set kadm.TopicsSet // nil: every partition
			switch {
			case partition >= 0:
				set = kadm.TopicsSet{}
				set.Add(topic, int32(partition))
			case topic != "":
				// Every partition of the topic: the request names
				// partitions, so look them up.
				details, err := a.adm.ListTopics(ctx, topic)
				if err != nil {
					return err
				}
				d := details[topic]
				if d.Err != nil {
					return fmt.Errorf("topic %s: %w", topic, d.Err)
				}
				set = kadm.TopicsSet{}
				for p := range d.Partitions {
					set.Add(topic, p)
				}
			}
			res, err := a.adm.ElectLeaders(ctx, how, set)
			if err != nil {
				return err
			}
			type result struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Error     string `json:"error,omitempty"`
			}
			var out []result
			var rows [][]string
			var errs []error
			for _, t := range slices.Sorted(maps.Keys(res)) {
				for _, p := range slices.Sorted(maps.Keys(res[t])) {
					r := res[t][p]
					e := errText(r.Err, r.ErrMessage)
					out = append(out, result{t, p, e})
					status := "elected"
					if r.Err != nil {
						status = e
					}
					rows = append(rows, []string{t, strconv.Itoa(int(p)), status})
					errs = append(errs, r.Err)
				}
			}
			if err := a.emit(out, []string{"TOPIC", "PARTITION", "RESULT"}, rows); err != nil {
				return err
			}
			// ELECTION_NOT_NEEDED is no failure: the leader is already
			// where it was asked to be.
			return firstErr("elections", slices.DeleteFunc(errs, isElectionNotNeeded))
		},
	}
}

func logDirsDescribe() adminCommand {
	var brokerList, topics commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Var(&brokerList, "broker", "broker id to describe (repeatable; absent: every broker)")
			fs.Var(&topics, "topic", "only partitions of this topic (repeatable)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			brokers, err := list32(brokerList.String())
			if err != nil {
				return usagef("--broker: %v", err)
			}
			all := kadm.DescribedAllLogDirs{}
			if len(brokers) == 0 {
				if all, err = a.adm.DescribeAllLogDirs(ctx, nil); err != nil {
					return err
				}
			}
			for _, b := range brokers {
				d, err := a.adm.DescribeBrokerLogDirs(ctx, b, nil)
				if err != nil {
					return fmt.Errorf("broker %d: %w", b, err)
				}
				all[b] = d
			}
			// Kafka's kafka-log-dirs.sh JSON, with the volume sizes.
			type partition struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				OffsetLag int64  `json:"offsetLag"`
				IsFuture  bool   `json:"isFuture"`
			}
			type logDir struct {
				LogDir      string      `json:"logDir"`
				Error       *string     `json:"error"`
				TotalBytes  int64       `json:"totalBytes"`
				UsableBytes int64       `json:"usableBytes"`
				Partitions  []partition `json:"partitions"`
			}
			type broker struct {
				Broker  int32    `json:"broker"`
				LogDirs []logDir `json:"logDirs"`
			}
			out := struct {
				Version int      `json:"version"`
				Brokers []broker `json:"brokers"`
			}{Version: 1, Brokers: []broker{}}
			var rows [][]string
			var errs []error
			for _, b := range slices.Sorted(maps.Keys(all)) {
				ob := broker{Broker: b}
				for _, d := range all[b].Sorted() {
					od := logDir{LogDir: d.Dir, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes, Partitions: []partition{}}
					errs = append(errs, d.Err)
					head := []string{strconv.Itoa(int(b)), d.Dir, strconv.FormatInt(d.TotalBytes, 10), strconv.FormatInt(d.UsableBytes, 10)}
					if d.Err != nil {
						e := d.Err.Error()
						od.Error = &e
						rows = append(rows, append(head, "-", "-", "-", "-", e))
					}
					for _, p := range d.Topics.Sorted() {
						if len(topics) > 0 && !slices.Contains(topics, p.Topic) {
							continue
						}
						od.Partitions = append(od.Partitions, partition{fmt.Sprintf("%s-%d", p.Topic, p.Partition), p.Size, p.OffsetLag, p.IsFuture})
						rows = append(rows, append(slices.Clone(head), p.Topic, strconv.Itoa(int(p.Partition)),
							strconv.FormatInt(p.Size, 10), strconv.FormatInt(p.OffsetLag, 10), "OK"))
					}
					if d.Err == nil && len(od.Partitions) == 0 {
						rows = append(rows, append(head, "-", "-", "-", "-", "OK"))
					}
					ob.LogDirs = append(ob.LogDirs, od)
				}
				out.Brokers = append(out.Brokers, ob)
			}
			if err := a.emit(out, []string{"BROKER", "DIR", "TOTAL-BYTES", "USABLE-BYTES", "TOPIC", "PARTITION", "SIZE", "OFFSET-LAG", "STATUS"}, rows); err != nil {
				return err
			}
			return firstErr("log dirs", errs)
		},
	}
}

func isElectionNotNeeded(err error) bool { return errors.Is(err, kerr.ElectionNotNeeded) }

// logDirsMove moves replicas of one broker to another of its log dirs
// (AlterReplicaLogDirs; kafka-reassign-partitions.sh does it for the
// log_dirs of its JSON). The move goes on in the background once
// accepted: log-dirs describe shows the future replica until it is done.
func logDirsMove() adminCommand {
	var broker int
	var dir, topic string
	var partitions commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&broker, "broker", -1, "the broker whose replicas move")
			fs.StringVar(&dir, "dir", "", "the log dir to move them to (as in the broker's log.dirs)")
			fs.StringVar(&topic, "topic", "", "the topic")
			fs.Var(&partitions, "partition", "partition to move (repeatable or comma-separated; absent: every partition of --topic on the broker)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if broker < 0 || dir == "" || topic == "" {
				return usagef("--broker, --dir and --topic are required")
			}
			ps, err := list32(partitions.String())
			if err != nil {
				return usagef("--partition: %v", err)
			}
			if len(ps) == 0 {
				details, err := a.adm.ListTopics(ctx, topic)
				if err != nil {
					return err
				}
				d := details[topic]
				if d.Err != nil {
					return fmt.Errorf("topic %s: %w", topic, d.Err)
				}
				for p, pd := range d.Partitions {
					if slices.Contains(pd.Replicas, int32(broker)) {
						ps = append(ps, p)
					}
				}
			}
			var req kadm.AlterReplicaLogDirsReq
			set := kadm.TopicsSet{}
			set.Add(topic, ps...)
			req.Add(dir, set)
			res, err := a.adm.AlterBrokerReplicaLogDirs(ctx, int32(broker), req)
			if err != nil {
				return err
			}
			type result struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Dir       string `json:"dir"`
				Error     string `json:"error,omitempty"`
			}
			var out []result
			var rows [][]string
			var errs []error
			for _, p := range slices.Sorted(maps.Keys(res[topic])) {
				r := res[topic][p]
				e := errText(r.Err, "")
				out = append(out, result{topic, p, dir, e})
				status := "moving"
				if r.Err != nil {
					status = e
				}
				rows = append(rows, []string{topic, strconv.Itoa(int(p)), dir, status})
				errs = append(errs, r.Err)
			}
			if err := a.emit(out, []string{"TOPIC", "PARTITION", "DIR", "RESULT"}, rows); err != nil {
				return err
			}
			return firstErr("log dir moves", errs)
		},
	}
}
