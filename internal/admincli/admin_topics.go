package admincli

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The topics commands: kafka-topics.sh's create, describe, alter
// (partition count), delete and list.

func topicsCreate() adminCommand {
	var topics, configs commaList
	var partitions, rf int
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Var(&topics, "topic", "topic to create (repeatable)")
			fs.IntVar(&partitions, "partitions", -1, "number of partitions (-1: the broker's num.partitions)")
			fs.IntVar(&rf, "replication-factor", -1, "replicas of each partition (-1: the broker's default.replication.factor)")
			fs.Var(&configs, "config", "a topic config key=value (repeatable)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if len(topics) == 0 {
				return usagef("--topic is required")
			}
			cfg := map[string]*string{}
			for _, kv := range configs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--config %q is not key=value", kv)
				}
				cfg[k] = &v
			}
			res, err := a.adm.CreateTopics(ctx, int32(partitions), int16(rf), cfg, topics...)
			if err != nil {
				return err
			}
			type created struct {
				Topic             string `json:"topic"`
				ID                string `json:"id,omitempty"`
				Partitions        int32  `json:"partitions"`
				ReplicationFactor int16  `json:"replicationFactor"`
				Error             string `json:"error,omitempty"`
			}
			var out []created
			var rows [][]string
			var errs []error
			for _, r := range res.Sorted() {
				c := created{Topic: r.Topic, Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor, Error: errText(r.Err, r.ErrMessage)}
				if r.Err == nil {
					c.ID = topicIDString(r.ID)
				}
				out = append(out, c)
				errs = append(errs, r.Err)
				rows = append(rows, []string{c.Topic, c.ID, strconv.Itoa(int(c.Partitions)), strconv.Itoa(int(c.ReplicationFactor)), orOK(c.Error)})
			}
			if err := a.emit(out, []string{"TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "RESULT"}, rows); err != nil {
				return err
			}
			return firstErr("creations", errs)
		},
	}
}

func topicsDescribe() adminCommand {
	var topics commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) { fs.Var(&topics, "topic", "topic to describe (repeatable; all when absent)") },
		run: func(ctx context.Context, a *adminEnv) error {
			details, err := a.adm.ListTopics(ctx, topics...)
			if err != nil {
				return err
			}
			type partition struct {
				Partition   int32   `json:"partition"`
				Leader      int32   `json:"leader"`
				LeaderEpoch int32   `json:"leaderEpoch"`
				Replicas    []int32 `json:"replicas"`
				ISR         []int32 `json:"isr"`
				Error       string  `json:"error,omitempty"`
			}
			type topic struct {
				Topic      string      `json:"topic"`
				ID         string      `json:"id"`
				Partitions []partition `json:"partitions"`
				Error      string      `json:"error,omitempty"`
			}
			var out []topic
			var rows [][]string
			var errs []error
			for _, d := range details.Sorted() {
				t := topic{Topic: d.Topic, ID: topicIDString(d.ID), Error: errText(d.Err, "")}
				errs = append(errs, d.Err)
				if d.Err != nil {
					rows = append(rows, []string{d.Topic, "", "", "", "", "", t.Error})
				}
				for _, p := range d.Partitions.Sorted() {
					pp := partition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
						Replicas: p.Replicas, ISR: p.ISR, Error: errText(p.Err, "")}
					t.Partitions = append(t.Partitions, pp)
					rows = append(rows, []string{d.Topic, strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)),
						strconv.Itoa(int(p.LeaderEpoch)), join32(p.Replicas), join32(p.ISR), orOK(pp.Error)})
				}
				out = append(out, t)
			}
			if err := a.emit(out, []string{"TOPIC", "PARTITION", "LEADER", "LEADER-EPOCH", "REPLICAS", "ISR", "STATUS"}, rows); err != nil {
				return err
			}
			return firstErr("topics", errs)
		},
	}
}

func topicsAlter() adminCommand {
	var topics commaList
	var partitions int
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Var(&topics, "topic", "topic to alter (repeatable)")
			fs.IntVar(&partitions, "partitions", 0, "the new partition count (more than the current one)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if len(topics) == 0 || partitions <= 0 {
				return usagef("--topic and --partitions are required")
			}
			res, err := a.adm.UpdatePartitions(ctx, partitions, topics...)
			if err != nil {
				return err
			}
			return emitTopicResults(a, res.Sorted(), func(r kadm.CreatePartitionsResponse) (string, string, error) {
				return r.Topic, r.ErrMessage, r.Err
			}, "alterations")
		},
	}
}

func topicsDelete() adminCommand {
	var topics commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) { fs.Var(&topics, "topic", "topic to delete (repeatable)") },
		run: func(ctx context.Context, a *adminEnv) error {
			if len(topics) == 0 {
				return usagef("--topic is required")
			}
			res, err := a.adm.DeleteTopics(ctx, topics...)
			if err != nil {
				return err
			}
			return emitTopicResults(a, res.Sorted(), func(r kadm.DeleteTopicResponse) (string, string, error) {
				return r.Topic, r.ErrMessage, r.Err
			}, "deletions")
		},
	}
}

// emitTopicResults prints one line per topic: OK or its error.
func emitTopicResults[R any](a *adminEnv, res []R, get func(R) (topic, errMessage string, err error), what string) error {
	type result struct {
		Topic string `json:"topic"`
		Error string `json:"error,omitempty"`
	}
	var out []result
	var rows [][]string
	var errs []error
	for _, r := range res {
		topic, msg, err := get(r)
		out = append(out, result{topic, errText(err, msg)})
		rows = append(rows, []string{topic, orOK(errText(err, msg))})
		errs = append(errs, err)
	}
	if err := a.emit(out, []string{"TOPIC", "RESULT"}, rows); err != nil {
		return err
	}
	return firstErr(what, errs)
}

func topicsList() adminCommand {
	return adminCommand{
		flags: func(*flag.FlagSet) {},
		run: func(ctx context.Context, a *adminEnv) error {
			details, err := a.adm.ListTopics(ctx)
			if err != nil {
				return err
			}
			names := details.Names()
			slices.Sort(names)
			if a.json {
				return a.emit(names, nil, nil)
			}
			for _, n := range names {
				fmt.Fprintln(a.out, n)
			}
			return nil
		},
	}
}

// orOK is a result cell: the error, or OK.
func orOK(e string) string {
	if e == "" {
		return "OK"
	}
	return e
}

// topicIDString prints a topic id as Kafka's tools do: unpadded
// base64url.
func topicIDString(id kadm.TopicID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
