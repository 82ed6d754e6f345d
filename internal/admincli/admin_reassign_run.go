package admincli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassign --execute, --verify and --cancel: the plan file is Kafka's
// reassignment JSON, as --generate prints it (the proposed document).

// readPlan reads a reassignment JSON file.
func readPlan(path string) (reassignment, error) {
	var plan reassignment
	b, err := os.ReadFile(path)
	if err != nil {
		return plan, usagef("%v", err)
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		return plan, usagef("%s: not a reassignment JSON document: %v", path, err)
	}
	if plan.Version != 1 || len(plan.Partitions) == 0 {
		return plan, usagef("%s: want {\"version\":1,\"partitions\":[...]} with at least one partition", path)
	}
	for _, p := range plan.Partitions {
		if p.Topic == "" || p.Partition < 0 || len(p.Replicas) == 0 {
			return plan, usagef("%s: bad partition entry %+v", path, p)
		}
	}
	return plan, nil
}

// planPartition is one line of an execute, cancel or verify report.
type planPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas,omitempty"`
	Status    string  `json:"status"`
	Error     string  `json:"error,omitempty"`
}

func emitPlanResults(a *adminEnv, out []planPartition, what string) error {
	var rows [][]string
	var errs []error
	for _, p := range out {
		status := p.Status
		if p.Error != "" {
			status = p.Error
			errs = append(errs, errors.New(p.Error))
		}
		rows = append(rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), join32(p.Replicas), status})
	}
	if err := a.emit(out, []string{"TOPIC", "PARTITION", "REPLICAS", "STATUS"}, rows); err != nil {
		return err
	}
	return firstErr(what, errs)
}

func reassignExecute(ctx context.Context, a *adminEnv, path string) error {
	plan, err := readPlan(path)
	if err != nil {
		return err
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	res, err := a.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var out []planPartition
	for _, p := range plan.Partitions {
		r := res[p.Topic][p.Partition]
		out = append(out, planPartition{p.Topic, p.Partition, p.Replicas, "started", errText(r.Err, r.ErrMessage)})
	}
	return emitPlanResults(a, out, "reassignments")
}

func reassignCancel(ctx context.Context, a *adminEnv, path string) error {
	plan, err := readPlan(path)
	if err != nil {
		return err
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range plan.Partitions {
		req.CancelAssign(p.Topic, p.Partition)
	}
	res, err := a.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var out []planPartition
	for _, p := range plan.Partitions {
		r := res[p.Topic][p.Partition]
		out = append(out, planPartition{Topic: p.Topic, Partition: p.Partition, Status: "cancelled", Error: errText(r.Err, r.ErrMessage)})
	}
	return emitPlanResults(a, out, "cancellations")
}

// reassignVerify reports each partition of the plan as in progress,
// complete (its replicas are the plan's) or failed (no reassignment in
// progress, yet other replicas). Only the last is an error.
//
// ListPartitionReassignments is answered by the broker named as the
// controller and Metadata by any broker, which may not have applied the
// record completing a reassignment yet: a partition found failed is
// looked at again, up to verifySettle, before it is reported so.
func reassignVerify(ctx context.Context, a *adminEnv, path string) error {
	plan, err := readPlan(path)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(verifySettle)
	for {
		out, failed, err := verifyPlan(ctx, a, plan)
		if err != nil {
			return err
		}
		if !failed || !time.Now().Before(deadline) {
			return emitPlanResults(a, out, "reassignments")
		}
		select {
		case <-ctx.Done():
			return emitPlanResults(a, out, "reassignments")
		case <-time.After(verifyRetry):
		}
	}
}

// verifySettle bounds how long reassign --verify waits for the brokers'
// metadata to agree with the controller's before it reports a partition
// failed; verifyRetry is the pause between two looks.
const (
	verifySettle = 3 * time.Second
	verifyRetry  = 200 * time.Millisecond
)

// verifyPlan looks once at the plan's partitions; failed reports whether
// one has no reassignment in progress but other replicas than planned.
func verifyPlan(ctx context.Context, a *adminEnv, plan reassignment) (out []planPartition, failed bool, err error) {
	set := kadm.TopicsSet{}
	var topics []string
	for _, p := range plan.Partitions {
		set.Add(p.Topic, p.Partition)
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	active, err := a.adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, false, err
	}
	// A Metadata request of its own, not kadm's ListTopics: that answers
	// from the client's metadata cache (up to MetadataMinAge old), so a
	// second look would see nothing new.
	mreq := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		mreq.Topics = append(mreq.Topics, rt)
	}
	mresp, err := mreq.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, false, err
	}
	replicas := map[string]map[int32][]int32{}
	for _, t := range mresp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		ps := map[int32][]int32{}
		for _, p := range t.Partitions {
			ps[p.Partition] = p.Replicas
		}
		replicas[*t.Topic] = ps
	}
	for _, p := range plan.Partitions {
		pp := planPartition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas}
		if r, ok := active[p.Topic][p.Partition]; ok {
			pp.Status = fmt.Sprintf("in progress (adding %s, removing %s)", join32(r.AddingReplicas), join32(r.RemovingReplicas))
			out = append(out, pp)
			continue
		}
		cur, ok := replicas[p.Topic][p.Partition]
		switch {
		case !ok:
			pp.Error = "unknown topic or partition"
		case slices.Equal(cur, p.Replicas):
			pp.Status = "complete"
		default:
			pp.Error = fmt.Sprintf("no reassignment in progress, but the replicas are %s", join32(cur))
			failed = true
		}
		out = append(out, pp)
	}
	return out, failed, nil
}
