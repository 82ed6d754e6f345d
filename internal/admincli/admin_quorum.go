package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorum describe (kafka-metadata-quorum.sh describe --status and
// --replication: DescribeQuorum), quorum add-voter and quorum
// remove-voter (kafka-metadata-quorum.sh add-controller and
// remove-controller: AddRaftVoter, RemoveRaftVoter; KIP-853).

// quorumReplica is one member of the quorum as `quorum describe` shows it.
type quorumReplica struct {
	ID                    int32  `json:"id"`
	Status                string `json:"status"` // Leader, Follower, Observer
	LogEndOffset          int64  `json:"logEndOffset"`
	Lag                   int64  `json:"lag"` // high watermark - log end offset; -1 unknown
	LastFetchTimestamp    int64  `json:"lastFetchTimestamp"`
	LastCaughtUpTimestamp int64  `json:"lastCaughtUpTimestamp"`
	Address               string `json:"address,omitempty"` // a voter's controller listener
}

func quorumDescribe() adminCommand {
	return adminCommand{
		flags: func(*flag.FlagSet) {},
		run: func(ctx context.Context, a *adminEnv) error {
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			// franz-go routes DescribeQuorum to the controller the
			// Metadata answer names, which is not reachable as a broker
			// when it is a controller-only node; every kbroker node
			// forwards it to the active controller, so ask the seed.
			var resp *kmsg.DescribeQuorumResponse
			var err error
			if seeds := a.cl.SeedBrokers(); len(seeds) > 0 {
				var r kmsg.Response
				if r, err = seeds[0].Request(ctx, req); err == nil {
					resp = r.(*kmsg.DescribeQuorumResponse)
				}
			} else {
				resp, err = req.RequestWith(ctx, a.cl)
			}
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return errors.New(errText(err, deref(resp.ErrorMessage)))
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return errors.New("the broker answered DescribeQuorum without __cluster_metadata-0")
			}
			p := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return errors.New(errText(err, deref(p.ErrorMessage)))
			}
			addrs := map[int32]string{}
			for _, n := range resp.Nodes {
				if len(n.Listeners) > 0 {
					addrs[n.NodeID] = net.JoinHostPort(n.Listeners[0].Host, strconv.Itoa(int(n.Listeners[0].Port)))
				}
			}
			out := struct {
				LeaderID      int32           `json:"leaderId"`
				LeaderEpoch   int32           `json:"leaderEpoch"`
				HighWatermark int64           `json:"highWatermark"`
				Replicas      []quorumReplica `json:"replicas"`
			}{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Replicas: []quorumReplica{}}
			add := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, observer bool) {
				for _, r := range rs {
					q := quorumReplica{ID: r.ReplicaID, Status: "Follower", LogEndOffset: r.LogEndOffset, Lag: -1,
						LastFetchTimestamp: r.LastFetchTimestamp, LastCaughtUpTimestamp: r.LastCaughtUpTimestamp, Address: addrs[r.ReplicaID]}
					switch {
					case observer:
						q.Status = "Observer"
					case r.ReplicaID == p.LeaderID:
						q.Status = "Leader"
					}
					if r.LogEndOffset >= 0 {
						q.Lag = max(0, p.HighWatermark-r.LogEndOffset)
					}
					out.Replicas = append(out.Replicas, q)
				}
			}
			add(p.CurrentVoters, false)
			add(p.Observers, true)
			if !a.json {
				fmt.Fprintf(a.out, "LeaderId: %d  LeaderEpoch: %d  HighWatermark: %d  Voters: %d  Observers: %d\n\n",
					p.LeaderID, p.LeaderEpoch, p.HighWatermark, len(p.CurrentVoters), len(p.Observers))
			}
			now := time.Now()
			ago := func(ms int64) string {
				if ms < 0 {
					return "-"
				}
				return now.Sub(time.UnixMilli(ms)).Round(time.Millisecond).String() + " ago"
			}
			var rows [][]string
			for _, r := range out.Replicas {
				leo, lag := "-", "-"
				if r.LogEndOffset >= 0 {
					leo, lag = strconv.FormatInt(r.LogEndOffset, 10), strconv.FormatInt(r.Lag, 10)
				}
				addr := r.Address
				if addr == "" {
					addr = "-"
				}
				rows = append(rows, []string{strconv.Itoa(int(r.ID)), r.Status, leo, lag, ago(r.LastFetchTimestamp), ago(r.LastCaughtUpTimestamp), addr})
			}
			return a.emit(out, []string{"NODE", "STATUS", "LOG-END-OFFSET", "LAG", "LAST-FETCH", "LAST-CAUGHT-UP", "ADDRESS"}, rows)
		},
	}
}

func quorumAddVoter() adminCommand {
	id := -1
	var listener string
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&id, "id", -1, "the node id to make a voter (it must be running and following the metadata log)")
			fs.StringVar(&listener, "controller-listener", "", "NAME://host:port or host:port of the node's controller listener (default: the address it joined with)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if id < 0 {
				return usagef("--id is required")
			}
			req := kmsg.NewPtrAddRaftVoterRequest()
			req.VoterID = int32(id)
			// The controller may wait for the node to catch up and the
			// change to commit for most of --timeout, leaving time for
			// its answer to come back.
			if dl, ok := ctx.Deadline(); ok {
				req.TimeoutMillis = int32(min(max(time.Until(dl)*9/10, time.Millisecond), time.Duration(1<<31-1)*time.Millisecond).Milliseconds())
			}
			if listener != "" {
				l, err := parseVoterListener(listener)
				if err != nil {
					return usagef("--controller-listener %q: %v", listener, err)
				}
				req.Listeners = append(req.Listeners, l)
			}
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			return voterChangeResult(a, "added", id, resp.ErrorCode, resp.ErrorMessage)
		},
	}
}

func quorumRemoveVoter() adminCommand {
	id := -1
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&id, "id", -1, "the node id to remove from the voters")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if id < 0 {
				return usagef("--id is required")
			}
			req := kmsg.NewPtrRemoveRaftVoterRequest()
			req.VoterID = int32(id)
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			return voterChangeResult(a, "removed", id, resp.ErrorCode, resp.ErrorMessage)
		},
	}
}

// parseVoterListener reads NAME://host:port (NAME defaults to CONTROLLER,
// the usual controller.listener.names).
func parseVoterListener(s string) (kmsg.AddRaftVoterRequestListener, error) {
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name = "CONTROLLER"
	if name, rest, ok := cutScheme(s); ok {
		l.Name, s = name, rest
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return l, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return l, fmt.Errorf("bad port %q", port)
	}
	l.Host, l.Port = host, uint16(p)
	return l, nil
}

func cutScheme(s string) (name, rest string, ok bool) {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "://" {
			return s[:i], s[i+3:], i > 0
		}
	}
	return "", s, false
}

func voterChangeResult(a *adminEnv, done string, id int, code int16, msg *string) error {
	res := struct {
		ID    int32  `json:"id"`
		Error string `json:"error,omitempty"`
	}{ID: int32(id)}
	kerrv := kerr.ErrorForCode(code)
	res.Error = errText(kerrv, deref(msg))
	status := done
	if kerrv != nil {
		status = res.Error
	}
	if err := a.emit(res, []string{"NODE", "RESULT"}, [][]string{{strconv.Itoa(id), status}}); err != nil {
		return err
	}
	if kerrv != nil {
		return fmt.Errorf("voter %d: %w", id, kerrv)
	}
	return nil
}
