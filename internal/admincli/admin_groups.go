package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

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

// groupsDescribe is kafka-consumer-groups.sh --describe: per partition
// the committed offset (CURRENT-OFFSET), the high watermark
// (LOG-END-OFFSET: ListOffsets latest, read_uncommitted, as Kafka's tool
// lists it), LAG = LOG-END-OFFSET − CURRENT-OFFSET and the member
// consuming it. Classic groups are described with DescribeGroups,
// consumer (KIP-848) groups with ConsumerGroupDescribe.
func groupsDescribe() adminCommand {
	var groups commaList
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Var(&groups, "group", "group to describe (repeatable; or name the groups as arguments)")
		},
		args: func(args []string) error {
			groups = append(groups, args...)
			return nil
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if len(groups) == 0 {
				return usagef("name a group: groups describe GROUP, or --group G")
			}
			views, err := describeGroupViews(ctx, a.adm, groups)
			if err != nil {
				return err
			}
			// The committed offsets of each group, then the end offsets
			// of every topic any group consumes or committed to, at once.
			committed := make([]kadm.OffsetResponses, len(views))
			topics := map[string]bool{}
			for i := range views {
				v := &views[i]
				if v.err != nil {
					continue
				}
				if committed[i], err = a.adm.FetchOffsets(ctx, v.name); err != nil {
					if _, ok := errors.AsType[*kadm.AuthError](err); ok {
						return err
					}
					v.err = err
					continue
				}
				for t := range committed[i] {
					topics[t] = true
				}
				for _, m := range v.members {
					for t := range m.assigned {
						topics[t] = true
					}
				}
			}
			var ends kadm.ListedOffsets
			if len(topics) > 0 {
				var se *kadm.ShardErrors
				ends, err = a.adm.ListEndOffsets(ctx, slices.Sorted(maps.Keys(topics))...)
				if err != nil && !errors.As(err, &se) {
					return err // shard errors leave partitions out: their rows say so
				}
			}

			var out []describedGroupJSON
			var rows [][]string
			var errs []error
			for i, v := range views {
				g := describedGroupJSON{Group: v.name, Type: v.typ, State: v.state, Protocol: v.protocol,
					Members: len(v.members), Error: errText(v.err, "")}
				errs = append(errs, v.err)
				if v.err != nil {
					rows = append(rows, []string{v.name, "", "", "", "", "", "", "", "", g.Error})
					out = append(out, g)
					continue
				}
				g.Partitions, g.IdleMembers = groupLagRows(v, committed[i], ends)
				for _, p := range g.Partitions {
					cur, end, lag := "-", "-", "-"
					if p.CurrentOffset >= 0 {
						cur = strconv.FormatInt(p.CurrentOffset, 10)
					}
					if p.LogEndOffset >= 0 {
						end = strconv.FormatInt(p.LogEndOffset, 10)
					}
					if p.Lag != nil {
						lag = strconv.FormatInt(*p.Lag, 10)
					}
					rows = append(rows, []string{v.name, p.Topic, strconv.Itoa(int(p.Partition)), cur, end, lag,
						dash(p.ConsumerID), dash(p.Host), dash(p.ClientID), orOK(p.Error)})
				}
				// Members with nothing assigned, as Kafka's tool lists them.
				for _, m := range g.IdleMembers {
					rows = append(rows, []string{v.name, "-", "-", "-", "-", "-", dash(m.ConsumerID), dash(m.Host), dash(m.ClientID), "OK"})
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

// describedGroupJSON is one group of groups describe --output json.
type describedGroupJSON struct {
	Group string `json:"group"`
	// Type is classic or consumer (KIP-848).
	Type        string          `json:"type,omitempty"`
	State       string          `json:"state"`
	Protocol    string          `json:"protocol"`
	Members     int             `json:"members"`
	Partitions  []partitionLag  `json:"partitions"`
	IdleMembers []groupMemberID `json:"idleMembers,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// partitionLag is one row of groups describe. CurrentOffset is -1 without
// a commit, LogEndOffset -1 when it could not be listed; Lag is then
// null, as Kafka's tool prints "-".
type partitionLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"currentOffset"`
	LogEndOffset  int64  `json:"logEndOffset"`
	Lag           *int64 `json:"lag"`
	ConsumerID    string `json:"consumerId,omitempty"`
	Host          string `json:"host,omitempty"`
	ClientID      string `json:"clientId,omitempty"`
	Error         string `json:"error,omitempty"`
}

type groupMemberID struct {
	ConsumerID string `json:"consumerId"`
	Host       string `json:"host,omitempty"`
	ClientID   string `json:"clientId,omitempty"`
}

// groupView is a described group of either protocol.
type groupView struct {
	name, typ, state, protocol string
	members                    []memberView
	err                        error
}

type memberView struct {
	id, host, clientID string
	assigned           kadm.TopicsSet
}

// describeGroupViews describes groups in order: with DescribeGroups,
// and those it does not know (DescribeGroups v6 answers
// GROUP_ID_NOT_FOUND for a consumer group, KIP-1043) with
// ConsumerGroupDescribe.
func describeGroupViews(ctx context.Context, adm *kadm.Client, groups []string) ([]groupView, error) {
	described, err := adm.DescribeGroups(ctx, groups...)
	var se *kadm.ShardErrors
	if err != nil && !errors.As(err, &se) {
		return nil, err
	}
	views := make([]groupView, len(groups))
	var unknown []string
	for i, name := range groups {
		d, ok := described[name]
		switch {
		case !ok:
			views[i] = groupView{name: name, err: cmpOr(err, errors.New("not described"))}
		case errors.Is(d.Err, kerr.GroupIDNotFound):
			unknown = append(unknown, name)
			views[i] = groupView{name: name, err: d.Err}
		case d.Err != nil:
			views[i] = groupView{name: name, err: d.Err}
		default:
			v := groupView{name: name, typ: "classic", state: d.State, protocol: d.Protocol}
			for _, m := range d.Members {
				mv := memberView{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID, assigned: kadm.TopicsSet{}}
				if c, ok := m.Assigned.AsConsumer(); ok {
					for _, t := range c.Topics {
						mv.assigned.Add(t.Topic, t.Partitions...)
					}
				}
				v.members = append(v.members, mv)
			}
			views[i] = v
		}
	}
	if len(unknown) == 0 {
		return views, nil
	}
	consumers, err := adm.DescribeConsumerGroups(ctx, unknown...)
	if err != nil && !errors.As(err, &se) {
		return nil, err
	}
	for i := range views {
		d, ok := consumers[views[i].name]
		if !ok || !errors.Is(views[i].err, kerr.GroupIDNotFound) || d.Err != nil {
			continue // unknown to both: GROUP_ID_NOT_FOUND stands
		}
		v := groupView{name: d.Group, typ: "consumer", state: d.State, protocol: d.AssignorName}
		for _, m := range d.Members {
			v.members = append(v.members, memberView{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID, assigned: m.Assignment})
		}
		views[i] = v
	}
	return views, nil
}

func cmpOr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// groupLagRows are a group's rows: every partition assigned to a member
// or committed to, by topic and partition, with
// LAG = LOG-END-OFFSET − CURRENT-OFFSET (0 when the commit is past the
// end, as kadm rounds; none without a commit or an end offset, where
// Kafka's tool prints "-"); and the members with nothing assigned.
func groupLagRows(v groupView, committed kadm.OffsetResponses, ends kadm.ListedOffsets) ([]partitionLag, []groupMemberID) {
	owner := map[string]map[int32]*memberView{}
	var idle []groupMemberID
	for i := range v.members {
		m := &v.members[i]
		n := 0
		for t, ps := range m.assigned {
			if owner[t] == nil {
				owner[t] = map[int32]*memberView{}
			}
			for p := range ps {
				owner[t][p] = m
				n++
			}
		}
		if n == 0 {
			idle = append(idle, groupMemberID{m.id, m.host, m.clientID})
		}
	}
	parts := kadm.TopicsSet{}
	for t, ps := range owner {
		for p := range ps {
			parts.Add(t, p)
		}
	}
	for t, ps := range committed {
		for p := range ps {
			parts.Add(t, p)
		}
	}
	var rows []partitionLag
	for _, tp := range parts.Sorted() {
		for _, p := range tp.Partitions {
			r := partitionLag{Topic: tp.Topic, Partition: p, CurrentOffset: -1, LogEndOffset: -1}
			if m := owner[tp.Topic][p]; m != nil {
				r.ConsumerID, r.Host, r.ClientID = m.id, m.host, m.clientID
			}
			var errs []error
			if c, ok := committed.Lookup(tp.Topic, p); ok {
				if c.Err != nil {
					errs = append(errs, c.Err)
				} else {
					r.CurrentOffset = c.At
				}
			}
			if e, ok := ends.Lookup(tp.Topic, p); !ok {
				errs = append(errs, listedMissing(ends, tp.Topic))
			} else if e.Err != nil {
				errs = append(errs, e.Err)
			} else {
				r.LogEndOffset = e.Offset
			}
			if r.CurrentOffset >= 0 && r.LogEndOffset >= 0 {
				lag := max(r.LogEndOffset-r.CurrentOffset, 0)
				r.Lag = &lag
			}
			r.Error = errText(errors.Join(errs...), "")
			rows = append(rows, r)
		}
	}
	slices.SortFunc(idle, func(a, b groupMemberID) int { return strings.Compare(a.ConsumerID, b.ConsumerID) })
	return rows, idle
}

// listedMissing is why a partition has no end offset: its topic's error
// (ListEndOffsets lists an unknown topic as partition -1), or that the
// answer left it out.
func listedMissing(ends kadm.ListedOffsets, topic string) error {
	if e, ok := ends.Lookup(topic, -1); ok && e.Err != nil {
		return e.Err
	}
	return errors.New("no end offset listed")
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
