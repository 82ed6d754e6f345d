package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The groups commands: kafka-consumer-groups.sh --list, --describe,
// --delete and --reset-offsets.

func groupsList() adminCommand {
	return adminCommand{
		flags: func(*flag.FlagSet) {},
		run: func(ctx context.Context, a *adminEnv) error {
			groups, err := a.adm.ListGroups(ctx)
			if err != nil {
				return err
			}
			type group struct {
				Group        string `json:"group"`
				State        string `json:"state"`
				ProtocolType string `json:"protocolType"`
				Coordinator  int32  `json:"coordinator"`
			}
			var out []group
			var rows [][]string
			for _, g := range groups.Sorted() {
				out = append(out, group{g.Group, g.State, g.ProtocolType, g.Coordinator})
				rows = append(rows, []string{g.Group, g.State, g.ProtocolType, strconv.Itoa(int(g.Coordinator))})
			}
			return a.emit(out, []string{"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"}, rows)
		},
	}
}

func groupsDescribe() adminCommand {
	var groups commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) { fs.Var(&groups, "group", "group to describe (repeatable)") },
		run: func(ctx context.Context, a *adminEnv) error {
			if len(groups) == 0 {
				return usagef("--group is required")
			}
			lags, err := a.adm.Lag(ctx, groups...)
			if err != nil {
				return err
			}
			type partition struct {
				Topic         string `json:"topic"`
				Partition     int32  `json:"partition"`
				CurrentOffset int64  `json:"currentOffset"`
				LogEndOffset  int64  `json:"logEndOffset"`
				Lag           int64  `json:"lag"`
				ConsumerID    string `json:"consumerId,omitempty"`
				Host          string `json:"host,omitempty"`
				ClientID      string `json:"clientId,omitempty"`
				Error         string `json:"error,omitempty"`
			}
			type group struct {
				Group      string      `json:"group"`
				State      string      `json:"state"`
				Protocol   string      `json:"protocol"`
				Members    int         `json:"members"`
				Partitions []partition `json:"partitions"`
				Error      string      `json:"error,omitempty"`
			}
			var out []group
			var rows [][]string
			var errs []error
			for _, name := range groups {
				l, ok := lags[name]
				if !ok {
					continue
				}
				g := group{Group: name, State: l.State, Protocol: l.Protocol, Members: len(l.Members), Error: errText(l.Error(), "")}
				errs = append(errs, l.Error())
				if l.Error() != nil {
					rows = append(rows, []string{name, "", "", "", "", "", "", "", "", g.Error})
				}
				for _, ml := range l.Lag.Sorted() {
					p := partition{Topic: ml.Topic, Partition: ml.Partition, CurrentOffset: ml.Commit.At,
						LogEndOffset: ml.End.Offset, Lag: ml.Lag, Error: errText(ml.Err, "")}
					if ml.Member != nil {
						p.ConsumerID, p.Host, p.ClientID = ml.Member.MemberID, ml.Member.ClientHost, ml.Member.ClientID
					}
					g.Partitions = append(g.Partitions, p)
					cur := "-"
					if p.CurrentOffset >= 0 {
						cur = strconv.FormatInt(p.CurrentOffset, 10)
					}
					rows = append(rows, []string{name, p.Topic, strconv.Itoa(int(p.Partition)), cur,
						strconv.FormatInt(p.LogEndOffset, 10), strconv.FormatInt(p.Lag, 10),
						dash(p.ConsumerID), dash(p.Host), dash(p.ClientID), orOK(p.Error)})
				}
				out = append(out, g)
			}
			if err := a.emit(out, []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID", "STATUS"}, rows); err != nil {
				return err
			}
			return firstErr("groups", errs)
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func groupsDelete() adminCommand {
	var groups commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) { fs.Var(&groups, "group", "group to delete (repeatable)") },
		run: func(ctx context.Context, a *adminEnv) error {
			if len(groups) == 0 {
				return usagef("--group is required")
			}
			res, err := a.adm.DeleteGroups(ctx, groups...)
			if err != nil {
				return err
			}
			type result struct {
				Group string `json:"group"`
				Error string `json:"error,omitempty"`
			}
			var out []result
			var rows [][]string
			var errs []error
			for _, r := range res.Sorted() {
				out = append(out, result{r.Group, errText(r.Err, r.ErrMessage)})
				rows = append(rows, []string{r.Group, orOK(errText(r.Err, r.ErrMessage))})
				errs = append(errs, r.Err)
			}
			if err := a.emit(out, []string{"GROUP", "RESULT"}, rows); err != nil {
				return err
			}
			return firstErr("deletions", errs)
		},
	}
}

// groupsResetOffsets is kafka-consumer-groups.sh --reset-offsets: a dry
// run printing the new offsets unless --execute. The group must have no
// members (Empty or Dead), as in Kafka: a live member would commit over
// the reset.
func groupsResetOffsets() adminCommand {
	var group string
	var topics commaList
	var earliest, latest, execute bool
	var toOffset int64
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&group, "group", "", "the group whose offsets to reset")
			fs.Var(&topics, "topic", "topic whose partitions to reset (repeatable; absent: every topic the group has offsets for)")
			fs.BoolVar(&earliest, "to-earliest", false, "reset to each partition's log start offset")
			fs.BoolVar(&latest, "to-latest", false, "reset to each partition's log end offset")
			fs.Int64Var(&toOffset, "to-offset", -1, "reset to this offset (clamped to the log start and end)")
			fs.BoolVar(&execute, "execute", false, "commit the new offsets (else only print them)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			n := 0
			for _, b := range []bool{earliest, latest, toOffset >= 0} {
				if b {
					n++
				}
			}
			if group == "" || n != 1 {
				return usagef("--group and exactly one of --to-earliest, --to-latest, --to-offset N are required")
			}
			described, err := a.adm.DescribeGroups(ctx, group)
			if err != nil {
				return err
			}
			d := described[group]
			if errors.Is(d.Err, kerr.GroupIDNotFound) {
				// DescribeGroups v6 (KIP-1043): an unknown group, or a
				// consumer (KIP-848) group; ListGroups tells its state.
				listed, err := a.adm.ListGroups(ctx)
				if err != nil {
					return err
				}
				d.Err, d.State = nil, "Dead"
				if l, ok := listed[group]; ok {
					d.State = l.State
				}
			}
			if d.Err != nil {
				return fmt.Errorf("describe group %s: %w", group, d.Err)
			}
			if d.State != "Empty" && d.State != "Dead" {
				return fmt.Errorf("offsets can only be reset while group %s has no members; it is %s", group, d.State)
			}
			if len(topics) == 0 {
				committed, err := a.adm.FetchOffsets(ctx, group)
				if err != nil {
					return err
				}
				for t := range committed {
					topics = append(topics, t)
				}
				sort.Strings(topics)
				if len(topics) == 0 {
					return fmt.Errorf("group %s has no committed offsets; name the topics with --topic", group)
				}
			}
			starts, err := a.adm.ListStartOffsets(ctx, topics...)
			if err != nil {
				return err
			}
			ends, err := a.adm.ListEndOffsets(ctx, topics...)
			if err != nil {
				return err
			}
			if err := errors.Join(starts.Error(), ends.Error()); err != nil {
				return fmt.Errorf("listing offsets: %w", err)
			}
			plan := kadm.Offsets{}
			ends.Each(func(e kadm.ListedOffset) {
				s, _ := starts.Lookup(e.Topic, e.Partition)
				at := e.Offset
				switch {
				case earliest:
					at = s.Offset
				case toOffset >= 0:
					at = min(max(toOffset, s.Offset), e.Offset)
				}
				plan.Add(kadm.Offset{Topic: e.Topic, Partition: e.Partition, At: at, LeaderEpoch: -1})
			})
			type reset struct {
				Group     string `json:"group"`
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				NewOffset int64  `json:"newOffset"`
				Error     string `json:"error,omitempty"`
			}
			results := map[string]map[int32]error{}
			if execute {
				res, err := a.adm.CommitOffsets(ctx, group, plan)
				if err != nil {
					return err
				}
				for t, ps := range res {
					results[t] = map[int32]error{}
					for p, r := range ps {
						results[t][p] = r.Err
					}
				}
			}
			var out []reset
			var rows [][]string
			var errs []error
			for _, o := range plan.Sorted() {
				err := results[o.Topic][o.Partition]
				errs = append(errs, err)
				out = append(out, reset{group, o.Topic, o.Partition, o.At, errText(err, "")})
				status := "dry run"
				if execute {
					status = orOK(errText(err, ""))
				}
				rows = append(rows, []string{group, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.At, 10), status})
			}
			if err := a.emit(out, []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "STATUS"}, rows); err != nil {
				return err
			}
			return firstErr("commits", errs)
		},
	}
}
