// Package metadata is kbroker's replicated cluster metadata: the state
// machine of a hashicorp/raft log, and the controller operations that
// propose records to it.
//
// # Subpackages
//
// Four parts live in packages of their own, which never import this one:
//
//   - metadata/listener: the controller listener's transport, both ends:
//     accepting (with the accept loop's backoff), TLS and the SASL
//     exchange (Authenticator, Dialer), the preamble, raft's stream layer
//     (StreamLayer), the RPC's frames, serving them and one call. Which
//     operations exist, who may ask for them and the error codes stay
//     here (ops.go, auth.go, rpc.go); mux.go routes what it accepts.
//   - metadata/access: the ACLs (their index and filters), SCRAM
//     credentials and client quota entities, alterations and filters, as
//     values. Their records, applying them and the operations that
//     propose them stay here; ACL, ScramCredential, QuotaEntity and the
//     rest are aliases (access.go), so callers keep their names.
//   - metadata/decisions: the controller's pure decisions about partitions
//     (election, fencing, reassignment, placement) and Partition (aliased).
//   - metadata/features: feature levels as values: this build's ranges
//     (Supported), the level numbering, UpdateFeatures' validation (Plan)
//     and the check of a finalized level (Check). Its record, the image's
//     levels and the operation stay here (feature_levels.go).
//
// # The image
//
// An Image is one immutable version of the cluster metadata: the cluster
// id, the registered brokers (with their epoch and whether they are
// fenced), the topics with their partitions (replicas, leader, ISR, leader
// epoch, partition epoch) and config overrides, and the next free producer
// id, the ACLs (an index by resource pattern, see ACLs.Matching, and
// ACLVersion, the raft index of their last change) and the SCRAM
// credentials by user and mechanism, and the finalized feature levels
// (Image.Features, FeaturesEpoch). Image.Offset is the raft index of the
// last record applied.
//
// Every applied record builds a new Image copy-on-write: the maps and
// topics a record changes are copied, everything else is shared with the
// previous image. Raft hands the FSM committed entries in batches
// (fsm.ApplyBatch): the images between the entries of a batch are never
// published, so the topic maps are copied once per batch, and only the
// last image is. The image also keeps indexes derived from its topics (the
// partition and per-broker replica counts the partition limits check, the
// sorted topic names, SortedTopicNames), updated from what a record
// changed, so that no record and no request about one topic costs a pass
// over every partition (docs/ARCHITECTURE.md, "Metadata at scale"). The
// new image is published atomically (Store.Image), and
// the channel returned by Store.Changed is closed, so a watcher does
//
//	for {
//		ch := s.Changed()
//		img := s.Image()
//		... compare img with the image it saw before ...
//		<-ch
//	}
//
// Nobody may modify an image, its maps, slices or the structs it points to.
//
// # Records
//
// Each raft log entry (LogCommand) is one record, a JSON envelope
//
//	{"type": <recordType>, "version": <int16>, "payload": {...}}
//
//	type  name             version  effect
//	   1  RegisterBroker         1  add or update a broker; a new incarnation id gets epoch = raft index
//	   2  FenceBroker            1  fence a broker at its current epoch
//	   3  UnfenceBroker          1  unfence a broker at its current epoch
//	   4  CreateTopic            1  name, topic id, partitions (replicas, ISR, leader), configs
//	   5  DeleteTopic            1  remove a topic by id
//	   6  PartitionChange        1  new leader and ISR, based on the current leader and partition epochs
//	   7  ConfigChange           1  set/remove topic config overrides
//	   8  ProducerIDBlock        1  hand out [first, first+count); first must be the next free id
//	   9  SetClusterID           1  set the cluster id once (with the bootstrap SCRAM credentials
//	                                and, in a new cluster, the levels of features.Bootstrap)
//	  10  CreatePartitions       1  add partitions to a topic, numbered on from its count
//	  11  AccessControlEntry     1  add an ACL: id, resource type/name/pattern, principal, host,
//	                                operation, permission (Kafka's codes); an equal entry is a no-op
//	  12  RemoveAccessControlEntry 1  remove the ACL of an id
//	  13  UserScramCredential    1  set a user's credential for a mechanism: salt, stored key,
//	                                server key, iterations (never the password)
//	  14  RemoveUserScramCredential 1  remove a user's credential for a mechanism
//	  38  DelegationToken        1  add or replace a delegation token: id, owner, requester, renewers,
//	                                issue/max/expiry timestamps (never its HMAC); metadata.version 4
//	                                and up only (tokens.go)
//	  39  RemoveDelegationToken  1  remove a delegation token by id; metadata.version 4 and up only
//	  40  AlterReassignment      1  start, replace or cancel a partition reassignment (reassign.go)
//	  44  BrokerConfigChange     1  set/remove the per-broker dynamic configs of one broker id (brokers.go)
//	  48  ClientQuota            1  set/remove client quota values of one entity (quotas.go)
//	  56  PartitionChangeBatch   1  PartitionChange records, each applied or rejected alone, in one
//	                                entry; metadata.version 3 and up only (alter_partition.go)
//	  57  FeatureLevel           1  {"name": "metadata.version", "level": 2}: finalize a feature
//	                                (level 0 removes it); metadata.version 2 and up only
//	  64  UnregisterBroker       1  remove a fenced broker's registration at its current epoch (brokers.go)
//
// Type numbers are never reused. A record of an unknown type or a version
// above the one this code knows is rejected (ErrUnsupportedRecord): the
// image moves only its Offset. A build before feature levels would thus
// skip a FeatureLevel record unawares, so none is written (and snapshots
// stay in format 1) until an operator raises metadata.version to 2; a
// cluster created by this build starts there (metadata/features). A
// RegisterBroker carries the broker's supported ranges ("features"; none
// from an older build: features.Baseline; one an older controller dropped
// is sent again with the next heartbeat); the FSM refuses a broker that
// does not support a finalized level, and a FeatureLevel some broker does
// not support.
//
// Applying is deterministic: no clock, no randomness, no dependence on map
// iteration order. Whatever is random (topic ids, the cluster id, the
// starting broker of round-robin placement) is chosen by the proposer and
// carried in the record. The FSM re-checks what depends on state (topic
// exists, stale epochs, producer id block start) and rejects a record that
// fails: the image then changes only its Offset, and the proposer gets the
// error from raft's ApplyFuture.Response.
//
// A FenceBroker record also re-elects: every partition the broker leads
// gets a new leader (see Controller decisions) and the broker leaves every
// ISR it is not the last member of. Whether a topic allows unclean
// election depends on configs the FSM does not have (the broker default),
// so the proposer decides it: the record carries the ids of the topics
// whose effective unclean.leader.election.enable is true
// (uncleanTopics), and the FSM computes the elections from the image it
// applies to, so a concurrent ISR change cannot make the record stale. An
// UnfenceBroker record, and a RegisterBroker with a new incarnation (which
// registers the broker unfenced), elect leaders for the offline partitions
// whose ISR holds the broker.
//
// CreateTopic and CreatePartitions records carry the capacity limits the
// proposer had (limits: maxPartitions, maxBrokerPartitions; absent in
// older records, meaning none), and the FSM rejects one whose partitions
// would exceed them in the image it applies to (ErrPartitionLimit), so
// requests racing each other cannot together exceed a limit.
//
// A PartitionChange carries the leader epoch and partition epoch it was
// decided on; if either is not the current one it is rejected
// (ErrFencedLeaderEpoch, ErrStalePartitionEpoch). Applying it bumps the
// partition epoch, and the leader epoch when the leader changes.
//
// # Snapshots
//
// A snapshot (raft.FileSnapshotStore in <Dir>/snapshots) is the whole image
// as one JSON document {"version":1, "offset", "clusterId",
// "nextProducerId", "brokers" sorted by id, "topics" sorted by name,
// "clusterConfigs", "brokerConfigs" by broker id, "acls" sorted by
// resource pattern and id,
// "aclVersion", "scram" sorted by user and mechanism, "quotas" sorted by
// entity, and in format 2 "features", "featuresEpoch"}; the ACL index and
// the image's topic indexes are rebuilt on restore, not stored. A format
// other than 1 or 2 is refused: by Restore, and by Open for any retained
// snapshot, naming its file. The log and raft's stable state live in
// <Dir>/raft.db (raft-boltdb/v2): bbolt's meta pages carry its format
// version and raft's log entries their own, and both refuse one they do
// not know.
//
// # Controller operations
//
// RegisterBroker, CreateTopics, DeleteTopics, CreatePartitions,
// AllocateProducerIDs, AlterTopicConfigs, ChangePartition, AlterPartition
// (alter_partition.go: many partitions' ISR changes), FenceBroker,
// UnfenceBroker, Heartbeat, ReportBrokerDead, ControlledShutdown,
// CreateACLs, DeleteACLs, AlterScramCredentials, AlterClientQuotas
// (quotas.go), UnregisterBroker and AlterBrokerConfigs (brokers.go),
// ElectLeaders (elect.go), UpdateFeatures (feature_levels.go),
// CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken
// (tokens.go; the controller loop also removes expired tokens),
// AlterPartitionReassignments (reassign.go), and DescribeQuorum,
// AddVoter and RemoveVoter (quorum.go) may be called on any
// node. CreateACLs gives each new ACL a random id; DeleteACLs matches its
// filters (ACLFilter, Kafka's ANY/MATCH/LITERAL/PREFIXED semantics)
// against the active controller's image and removes what they match;
// AlterScramCredentials fails a deletion of a missing credential with
// ErrScramNotFound. Config.BootstrapScram is written with the cluster id
// when this node sets it, and ignored (logged by WaitReady) otherwise. Each is declared once (ops.go) as an
// op[Req, Resp]: its wire name, its request and response types, its
// implementation on the active controller, and which node it acts for
// (actsFor, see Authentication). defineOp registers the server end of
// the op under its name; call(ctx, s, op, req) runs op.run on this node
// when it is the raft leader (the active controller), passing req as is,
// and otherwise sends req as JSON over the controller RPC to the leader,
// whose registered handler decodes it into Req, runs the same op.run and
// answers the Resp, which call decodes into Resp. A caller and the
// implementation cannot disagree on types (a mismatch does not compile),
// and adding an operation is one defineOp declaration.
//
// The leader validates against its current image, proposes records with
// raft.Apply and answers when they are committed and applied to its image
// (not necessarily yet to the caller's: WaitReady or Changed for that).
// Placement puts replica r of partition p on broker (start+p+r) mod n of
// the n unfenced brokers sorted by id; the leader is the first replica that
// is an unfenced registered broker, the ISR is all replicas, and both
// epochs start at 0.
//
// call retries while ctx allows when the leader answers NOT_CONTROLLER or
// the connection fails (the leader moves during elections); a node that
// knows no leader asks the voters of Config.Voters, whose NOT_CONTROLLER
// answers name the leader they know. After Config.noLeaderWait (5s)
// without any leader, or when ctx ends first, it fails with
// ErrNotController (wrapping ctx.Err() in the second case). A request
// retried after a connection broke may have run once already: the retry
// then fails like a repeated request (ErrTopicExists, say).
//
// # The controller listener and the controller RPC
//
// Every node, voter or broker-only, calls Open with BindAddr = its
// controller listener; Open listens there itself. The first byte a dialer
// writes on a new connection (inside TLS, see Authentication) picks the
// protocol (mux.go, package listener): 'R' is raft (a raft.NetworkTransport
// over listener.StreamLayer, whose Dial writes the 'R'), 'C' is the controller RPC;
// another byte, or none within 5s, closes the connection. A node's raft address is its controller listener address
// (Config.AdvertiseAddr, else its Voters entry, else the bound address), so
// the leader's raft address is where its RPC is served. It is kept as
// written, a host name unresolved, and a voter is forwarded to at its
// Voters entry: a container's IP may change while its name does not.
//
// The accept loop survives Accept errors (EMFILE/ENFILE when the process
// runs out of file descriptors, ECONNABORTED): it backs off from 5ms
// doubling to 1s, reset by the next successful Accept, and logs at most
// once per 5s with the count of errors in between. It ends only when the
// listener is closed.
//
// # Authentication
//
// With Config.SASL set (SASL_PLAINTEXT, or SASL_SSL with ServerTLS and
// ClientTLS), every connection runs a framed SASL exchange (listener) after
// TCP (and TLS) and before the preamble: PLAIN or SCRAM with the node's
// own credentials, and ControllerSASL.AuthorizeUser admits only node
// principals, binding one that names a node to that node id as
// AuthorizePeer does. Frames are bounded (listener's maxSASLFrame) before anything
// is allocated, and the exchange shares the preamble's time bound.
//
// With Config.ServerTLS set and no SASL, every connection accepted on the controller
// listener does a TLS handshake before anything else, with a client
// certificate required and verified (ClientAuth is forced to
// RequireAndVerifyClientCert), and Config.AuthorizePeer maps the verified
// peer to a node id or refuses it (the connection is closed). The preamble
// is then read inside TLS, so raft (a raft.NetworkTransport whose
// listener.StreamLayer dials and accepts TLS connections) and the controller RPC both
// run over mutual TLS; nodes dial with Config.ClientTLS. A plain socket, a
// client without a certificate or with one of another CA never gets past
// the handshake, so neither a forged AppendEntries nor a forged controller
// request reaches raft or an operation. A raft connection ('R') is
// accepted only from a voter (of Config.Voters, or of raft's latest
// configuration: added by AddVoter): only leaders and candidates send
// raft requests, so a broker-only node's certificate cannot speak raft. (Within raft, the server id a voter's requests claim is not
// compared with its certificate.)
//
// Beyond Kafka, a node id is bound to its principal: each op names the
// node a request acts for (actsFor), and the server refuses it with
// ErrNotAuthorized (CLUSTER_AUTHORIZATION_FAILED) unless the authenticated
// peer is that node:
//
//	RegisterBroker, Heartbeat, ControlledShutdown   the broker
//	AllocateProducerIDs, AddNonvoter                the broker / node
//	ChangePartition (AlterPartition)                the partition's current leader
//	                                                (a change at an older leader epoch
//	                                                fails as fenced for anybody)
//	AlterPartition                                  the broker named; a partition it does not lead fails
//	ReportBrokerDead                                the reporter (reportedBy)
//	the others (admin operations a broker forwards  any authenticated node
//	for its clients, ReadIndex, Fence/Unfence)
//
// Operations this node runs itself (it is the active controller) are not
// checked: the process acts for itself. With no TLS (PLAINTEXT) nothing is
// checked, as before, and Open logs a warning that the controller listener
// is unauthenticated.
//
// The RPC (listener's frames, rpc.go's operations) carries frames of a 4-byte big-endian length and a JSON
// document, at most 16 MiB:
//
//	request   {"op": <name>, "timeoutMs": <caller's deadline>, "payload": <request>}
//	response  {"result": <result>}
//	       or {"error": {"code": <code>, "message": <text>, "leader": <addr, for NOT_CONTROLLER>}}
//
//	op                   payload                                   result
//	RegisterBroker       BrokerRegistration                        -
//	CreateTopics         {specs, validateOnly}                     [error|null, ...]
//	DeleteTopics         [name, ...]                               [error|null, ...]
//	CreatePartitions     {topic, totalCount, assignments, validateOnly}  -
//	AllocateProducerIDs  brokerId                                  {first, count}
//	AlterTopicConfigs    {topic, set, remove}                      -
//	AlterClusterConfigs  {set, remove}                             -
//	AlterBrokerConfigs   {brokerId, set, remove}                   -
//	UnregisterBroker     brokerId                                  -
//	ChangePartition      PartitionChange                           -
//	AlterPartition       {brokerId, changes: [PartitionChange]}    [error|null, ...]
//	ElectLeaders         {type, all, partitions}                   [{topic, partition, outcome, message}, ...]
//	AlterPartitionReassignments  {reassignments, allowReplicationFactorChange}  [error|null, ...]
//	FenceBroker          {brokerId, epoch}                         -
//	UnfenceBroker        {brokerId, epoch}                         -
//	Heartbeat            {brokerId, epoch}                         {fenced}
//	ReportBrokerDead     {brokerId, reportedBy}                    -
//	ControlledShutdown   {brokerId, epoch}                         -
//	AddNonvoter          {id, addr}                                -
//	DescribeQuorum       {}                                        QuorumDescription
//	AddVoter             {id, addr}                                -
//	RemoveVoter          {id}                                      -
//	ReadIndex            {}                                        {index}
//	UpdateFeatures       {updates, validateOnly}                   [error|null, ...]
//	CreateACLs           [ACL, ...]                                [error|null, ...]
//	DeleteACLs           [ACLFilter, ...]                          [{deleted: [ACL, ...], error}, ...]
//	AlterScramCredentials [{delete, credential}, ...]              [error|null, ...]
//
// An operation without a result answers {} as its result.
//
// Each sentinel error has a stable code (errorCodes: TOPIC_ALREADY_EXISTS,
// NOT_CONTROLLER, ...); the caller gets an error whose text is the
// remote's and which unwraps to the sentinel, so errors.Is works across
// the wire. The client keeps connections open between calls
// (listener.Pool), one call at a time on each, with the deadline of its
// ctx; the server answers the requests of a connection in order.
//
// # Quorum
//
// Config.Voters lists the metadata quorum (empty: this node alone). A
// voter whose directory holds no raft state (raft.HasExistingState)
// bootstraps the cluster with all the voters; every voter does the same
// with the same configuration, which raft allows, so the cluster forms
// when the voters start. A restart recovers from raft.db and the snapshots
// and never bootstraps again. A node not among the voters (broker-only,
// or a controller waiting to be added with AddVoter) starts raft without
// a configuration and asks the active controller (AddNonvoter, from
// joinLoop, retried with backoff) to add it as a raft non-voter at its
// address; it then receives the log and serves Image like every node.
//
// The voter set can change afterwards (quorum.go, Kafka's KIP-853):
// AddVoter promotes a non-voter that holds everything committed (asked
// over the controller RPC, ReplicaState) to a voter, RemoveVoter removes
// a voter, one change at a time (quorumMu; raft also refuses a change
// while one is uncommitted, and each carries the configuration index it
// was decided on). The configuration lives in raft's log and snapshots,
// so a change survives restarts on every node whatever Config.Voters
// says: a node added as a voter stays one, a removed voter never becomes
// one again by itself (it has state, so it does not bootstrap, and
// nothing adds a voter but AddVoter). Removing the active controller
// first transfers its leadership to the most caught-up voter
// (raft.LeadershipTransfer); the new leader then removes it. The last
// voter, and a removal that would leave fewer answering voters than a
// majority of the rest, are refused. Raft's ShutdownOnRemove is off: a
// removed node that still runs stays a follower, and joinLoop adds it
// back as a non-voter, as a removed KRaft voter stays an observer. A
// voter removed while it was down restarts believing it is a voter;
// after Config.leaderlessRejoin (10s) without a leader it asks DescribeQuorum and
// joins as a non-voter when the quorum no longer lists it.
//
// DescribeQuorum is answered by the active controller: leader epoch =
// raft term, high watermark = commit index, each replica's log end
// offset = the last index of its log as the replica reports it
// (ReplicaState, asked of every member with replicaProbeTimeout; -1 if
// it does not answer), its last fetch = its raft LastContact (when it
// last heard from the leader), its last caught-up time = the last time,
// in this term, the controller found it holding the commit index. The
// leader reports now for its own. Raft connections are accepted from
// voters of Config.Voters and of raft's latest configuration.
//
// WaitReady, on any node, waits for a known leader, a cluster id (the
// leader sets a random one) and for this node's image to reach the
// leader's image offset after a raft barrier (ReadIndex) as of the call,
// then fails with ErrUnsupportedFeature if the image finalized a level
// this build does not support (CheckSupported).
//
// # Capacity limits
//
// Config.MaxPartitions (max.partitions, default 100000) bounds the
// partitions of the cluster and Config.MaxBrokerPartitions
// (max.broker.partitions, default 10000) the partition replicas of each
// broker (limits.go). The controller checks them while it plans
// CreateTopics (a topic counts those planned before it in the same
// request) and CreatePartitions; a refused topic or CreatePartitions is
// refused whole with ErrPartitionLimit (Kafka POLICY_VIOLATION), and the
// FSM checks again (Records). Placement does not steer around a full
// broker: the request fails and the operator picks an assignment.
//
// A broker also registers a PartitionCapacity (BrokerRegistration, kept
// in Broker): the replicas its file-descriptor limit lets it open
// (cluster/capacity.go). The per-broker limit is then the smaller of it
// and max.broker.partitions, and the error names the broker and says it
// is its file-descriptor limit, so that a CreateTopics a broker could not
// open fails before anything is committed.
//
// # Controller decisions
//
// The decisions are pure functions of package metadata/decisions:
//
//   - ElectLeader: the first alive ISR member in assignment order; if none
//     and unclean election is allowed, the first alive replica.
//   - fencing (FenceBroker, by FenceBroker, a session timeout,
//     ReportBrokerDead or ControlledShutdown): each partition the broker
//     leads elects a new leader, and the broker leaves every ISR unless it
//     is the last member (Kafka keeps the last one); a partition without an
//     alive ISR member goes offline (leader -1). Leader epoch +1 when the
//     leader changes, partition epoch +1 on any change.
//   - unfencing (UnfenceBroker, a heartbeat of a fenced broker at its
//     current epoch, a new incarnation registering): offline partitions
//     whose ISR holds the broker elect a leader again. The broker rejoins
//     ISRs only through the partition leader's AlterPartition
//     (ChangePartition).
//   - sessions: the active controller keeps each broker's last heartbeat
//     (and registration) time in memory; on becoming leader it gives every
//     registered broker a full session from that moment. An unfenced
//     broker silent for Config.SessionTimeout (9s) is fenced. A heartbeat
//     at a stale epoch fails with ErrStaleBrokerEpoch.
//   - dead reports: ReportBrokerDead (gossip) only speeds detection up; the
//     controller's own heartbeat record decides. A report about an
//     unregistered or fenced broker is ignored. A broker silent for
//     Config.DeadReportGrace (default SessionTimeout/3; the node sets two
//     heartbeat intervals) is fenced at once; one heard from more
//     recently becomes a suspect, fenced by controllerLoop as soon as it
//     has been silent for the grace, and forgotten when it heartbeats
//     after the report (or re-registers, or the leader changes). A wrong
//     report therefore cannot fence a live broker.
//   - controlled shutdown: one FenceBroker record with clean elections only:
//     leadership moves to another alive ISR member, the broker leaves ISRs
//     (never below one) and is fenced. A partition whose only ISR member it
//     is goes offline until it returns (re-registers with a new
//     incarnation and a new epoch, unfenced).
//   - preferred leader election: with Config.AutoLeaderRebalance (default
//     on), every Config.LeaderImbalanceCheckInterval (5m) the active
//     controller proposes a PartitionChange moving leadership to each
//     partition's first replica when it is alive, in the ISR and not the
//     leader.
//
// # Goroutines
//
// Open starts raft, and raft owns its goroutines: its main loop, the FSM
// goroutine that calls ApplyBatch/Snapshot/Restore (one at a time), the
// snapshot goroutine that calls FSMSnapshot.Persist, and the transport's
// connection handlers. The Store owns, through goFunc and its WaitGroup:
//
//   - the accept loop of the controller listener (acceptLoop), and one
//     goroutine per accepted connection (route): it authenticates the peer
//     (TLS handshake and AuthorizePeer, bounded by 5s and Close), reads
//     the preamble, then hands the connection to raft's transport or
//     serves the RPC (serveRPC) until the connection closes;
//   - controllerLoop, which does the active controller's duties (sessions,
//     preferred leaders) while this node is the raft leader;
//   - joinLoop, on every node, which keeps it in raft's configuration
//     (adds a broker-only node, or a removed voter, as a non-voter);
//   - announceLoop, which follows the leader's commits with a raft
//     barrier so the followers learn the commit index at once;
//   - callWhileLeaderIs's watcher, one per forwarded call in flight,
//     which ends with the call;
//   - while DescribeQuorum, AddVoter or RemoveVoter runs on the leader,
//     one short-lived goroutine per replica asked (probeReplicas), each
//     bounded by replicaProbeTimeout and waited for before it returns.
//
// Store.Close cancels the Store's context (which ends controllerLoop,
// joinLoop, announceLoop, call's retries and the RPCs being served), closes the
// listener (ending the accept loop), calls raft.Shutdown (which stops
// raft's goroutines and closes the transport), closes every accepted
// connection still open (ending serveRPC and raft's connection handlers),
// waits for its goroutines, and closes raft.db. Store.wait starts one
// short-lived goroutine per raft future it waits for with a context; it
// ends when raft resolves the future, which raft does at the latest at
// shutdown.
//
// Locks: fsm.mu serializes publishing images; Store.mu guards the set of
// accepted connections; sessions.mu the heartbeat times; pidMu serializes
// AllocateProducerIDs on the leader; quorumMu serializes configuration
// changes (AddVoter, RemoveVoter, AddNonvoter) on the leader and is held
// across raft futures and replica questions, never while another of
// these locks is taken; quorumState.mu (a leaf) guards the caught-up
// times. None of the others is held while calling out or while another
// is taken.
package metadata
