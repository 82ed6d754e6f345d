package kafkaapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/fetchsession"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/sharecoord"
	"github.com/kbroker/kbroker/cluster/sharepart"
	"github.com/kbroker/kbroker/cluster/txncoord"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// Liveness is what the handlers ask the node about brokers' liveness and
// this broker's controller session (package cluster's liveness.go and
// session.go answer). Every method returns at once except AwaitFailover,
// which waits at most a couple of seconds, bounded by ctx too. None is
// called with a lock of this package held.
type Liveness interface {
	// LeaderCheck is replication.ErrNotLeader while this broker's
	// controller session is lost: it must not act as a leader.
	LeaderCheck() error
	// SessionLost reports the same as a bool.
	SessionLost() bool
	// RefusingLeader reports whether leader is an unfenced broker of img
	// whose listener refused this node's fetcher recently.
	RefusingLeader(img *metadata.Image, leader int32, now time.Time) bool
	// AnyRefusing reports whether any broker is marked refusing now.
	AnyRefusing() bool
	// AwaitFailover returns the image to answer a Metadata request from,
	// after waiting for the fencing of a refusing leader it asks about.
	AwaitFailover(ctx context.Context, req *kmsg.MetadataRequest) *metadata.Image
	// NoteRedirect records that a client was sent to leader, for the
	// controlled shutdown's drain.
	NoteRedirect(leader int32)
}

// ProducerIDs hands out producer ids from the blocks the controller
// allocates; Allocate may wait for one controller call (bounded).
type ProducerIDs interface {
	Allocate(ctx context.Context) (int64, error)
}

// Deps are what the handlers serve requests from, as the node builds
// them before it serves. The layers the node opens only in Run (the
// metadata store, the logs and the replica manager) come later, through
// Attach.
type Deps struct {
	Config   *config.Config
	Logger   *slog.Logger
	Metrics  *server.Metrics
	Liveness Liveness

	// ProduceWaiters and FetchWaiters are the delayed acks=all produces
	// and MinBytes fetches, keyed by partition.
	ProduceWaiters *purgatory.Purgatory[replication.TopicPartition]
	FetchWaiters   *purgatory.Purgatory[replication.TopicPartition]
	FetchSessions  *fetchsession.Cache
	ProducerIDs    ProducerIDs

	Groups     *groupcoord.Coordinator
	Txns       *txncoord.Coordinator
	TxnClients *txncoord.MarkerClients
	// Shares is the share coordinator (share groups and the states of
	// __share_group_state), SharePartitions the share-partitions this
	// broker leads (KIP-932).
	Shares          *sharecoord.Coordinator
	SharePartitions *sharepart.Manager

	// FetchPeer says how a Fetch request's sender counts: a broker (a
	// follower, or a principal of the inter-broker listener) or a
	// consumer.
	FetchPeer func(rc *server.RequestContext) replication.FetchPeer
}

// Handlers are the Kafka API handlers of one broker (Kafka's KafkaApis):
// one file per API, api_NN_name.go, each registering its key, version
// range and authorizations from init, and serving the decoded request
// with the layers below.
type Handlers struct {
	cfg      *config.Config
	logger   *slog.Logger
	metrics  *server.Metrics
	liveness Liveness

	produceWaiters *purgatory.Purgatory[replication.TopicPartition]
	fetchWaiters   *purgatory.Purgatory[replication.TopicPartition]
	fetchSessions  *fetchsession.Cache
	producerIDs    ProducerIDs
	groups         *groupcoord.Coordinator
	txns           *txncoord.Coordinator
	txnClients     *txncoord.MarkerClients
	shares         *sharecoord.Coordinator
	shareParts     *sharepart.Manager
	fetchPeer      func(rc *server.RequestContext) replication.FetchPeer
	autoCreator    *autoCreator

	// Set by Attach, before the first request.
	store    *metadata.Store
	logs     *storage.Manager
	replicas *replication.Manager
}

// New builds the handlers over d. They serve nothing until Attach.
func New(d Deps) *Handlers {
	return &Handlers{
		cfg: d.Config, logger: d.Logger, metrics: d.Metrics, liveness: d.Liveness,
		produceWaiters: d.ProduceWaiters, fetchWaiters: d.FetchWaiters,
		fetchSessions: d.FetchSessions, producerIDs: d.ProducerIDs,
		groups: d.Groups, txns: d.Txns, txnClients: d.TxnClients,
		shares: d.Shares, shareParts: d.SharePartitions,
		fetchPeer:   d.FetchPeer,
		autoCreator: newAutoCreator(),
	}
}

// Attach gives the handlers the layers the node opened in Run. It must
// happen before the server serves (the server's start orders it before
// every handler call).
func (h *Handlers) Attach(store *metadata.Store, logs *storage.Manager, replicas *replication.Manager) {
	h.store, h.logs, h.replicas = store, logs, replicas
}

// image is the metadata image this broker has applied.
func (h *Handlers) image() *metadata.Image { return h.store.Image() }
