package kafkaapi

// Helpers shared by the transaction API handlers (api_22, api_24–28).

import (
	"errors"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fencedForVersion maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for
// request versions older than first, which predate the code (KIP-588), as
// Kafka's KafkaApis does.
func fencedForVersion(err error, version, first int16) error {
	if version < first && errors.Is(err, kerr.ProducerFenced) {
		return kerr.InvalidProducerEpoch
	}
	return err
}

// txnIDAction is WRITE on a transactional id.
func txnIDAction(id string) server.Action {
	return server.Action{Operation: kmsg.ACLOperationWrite, ResourceType: kmsg.ACLResourceTypeTransactionalId, Name: id}
}
