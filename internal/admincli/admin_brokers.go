package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokers list (DescribeCluster, fenced brokers included) and brokers
// unregister (kafka-cluster.sh unregister: UnregisterBroker).

func brokersList() adminCommand {
	return adminCommand{
		flags: func(*flag.FlagSet) {},
		run: func(ctx context.Context, a *adminEnv) error {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeFencedBrokers = true // v2; older brokers list the live ones
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return errors.New(errText(err, deref(resp.ErrorMessage)))
			}
			type broker struct {
				ID         int32  `json:"id"`
				Host       string `json:"host"`
				Port       int32  `json:"port"`
				Rack       string `json:"rack,omitempty"`
				Fenced     bool   `json:"fenced"`
				Controller bool   `json:"controller"`
			}
			out := []broker{}
			for _, b := range resp.Brokers {
				out = append(out, broker{b.NodeID, b.Host, b.Port, deref(b.Rack), b.IsFenced, b.NodeID == resp.ControllerID})
			}
			slices.SortFunc(out, func(x, y broker) int { return int(x.ID) - int(y.ID) })
			var rows [][]string
			for _, b := range out {
				state := "alive"
				if b.Fenced {
					state = "fenced"
				}
				rack := b.Rack
				if rack == "" {
					rack = "-"
				}
				ctrl := ""
				if b.Controller {
					ctrl = "yes"
				}
				rows = append(rows, []string{strconv.Itoa(int(b.ID)), fmt.Sprintf("%s:%d", b.Host, b.Port), rack, state, ctrl})
			}
			return a.emit(out, []string{"ID", "ADDRESS", "RACK", "STATE", "CONTROLLER"}, rows)
		},
	}
}

func brokersUnregister() adminCommand {
	id := -1
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&id, "id", -1, "the id of the broker to unregister (stopped, so fenced)")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if id < 0 {
				return usagef("--id is required")
			}
			req := kmsg.NewPtrUnregisterBrokerRequest()
			req.BrokerID = int32(id)
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			res := struct {
				ID    int32  `json:"id"`
				Error string `json:"error,omitempty"`
			}{ID: int32(id)}
			kerrv := kerr.ErrorForCode(resp.ErrorCode)
			res.Error = errText(kerrv, deref(resp.ErrorMessage))
			status := "unregistered"
			if kerrv != nil {
				status = res.Error
			}
			if err := a.emit(res, []string{"ID", "RESULT"}, [][]string{{strconv.Itoa(id), status}}); err != nil {
				return err
			}
			if kerrv != nil {
				return fmt.Errorf("broker %d: %w", id, kerrv)
			}
			return nil
		},
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
