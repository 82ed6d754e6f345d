// Package metadata is kbroker's replicated cluster metadata: the state
// machine of a hashicorp/raft log, and the controller operations that
// propose records to it.
//
// # The image
//
// An Image is one immutable version of the cluster metadata: the cluster
// id, the registered brokers (with their epoch and whether they are
// fenced), the topics with their partitions (replicas, leader, ISR, leader
// epoch, partition epoch) and config overrides, and the next free producer
// id. Image.Offset is the raft index of the last record applied.
//
// Every applied record builds a new Image copy-on-write: the maps and
// topics a record changes are copied, everything else is shared with the
// previous image. The new image is published atomically (Store.Image), and
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
//	   9  SetClusterID           1  set the cluster id once
//
// Type numbers are never reused. A record of an unknown type or a version
// above the one this code knows is rejected (ErrUnsupportedRecord).
//
// Applying is deterministic: no clock, no randomness, no dependence on map
// iteration order. Whatever is random (topic ids, the cluster id, the
// starting broker of round-robin placement) is chosen by the proposer and
// carried in the record. The FSM re-checks what depends on state (topic
// exists, stale epochs, producer id block start) and rejects a record that
// fails: the image then changes only its Offset, and the proposer gets the
// error from raft's ApplyFuture.Response.
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
// "nextProducerId", "brokers" sorted by id, "topics" sorted by name}. The
// log and raft's stable state live in <Dir>/raft.db (raft-boltdb/v2).
//
// # Controller operations
//
// RegisterBroker, CreateTopics, DeleteTopics, AllocateProducerIDs,
// AlterTopicConfigs, ChangePartition, FenceBroker and UnfenceBroker run on
// the raft leader (the active controller) and return ErrNotController
// elsewhere; forwarding to the controller is not built yet. They validate
// against the current image, propose records with raft.Apply and return
// when the records are committed and applied to this node's image.
// Placement puts replica r of partition p on broker (start+p+r) mod n of the
// n unfenced brokers sorted by id; the leader is the first replica that is
// an unfenced registered broker, the ISR is all replicas, and both epochs
// start at 0.
//
// # Quorum
//
// Config.Voters lists the metadata quorum. This version runs it as a
// single voter: Open bootstraps a new cluster only when this node is the
// only voter and the directory holds no raft state (raft.HasExistingState);
// a restart recovers from raft.db and the snapshots and never bootstraps
// again.
//
// # Goroutines
//
// Open starts raft; raft owns all goroutines: its main loop, the FSM
// goroutine that calls Apply/Snapshot/Restore (one at a time), the
// snapshot goroutine that calls FSMSnapshot.Persist, and the TCP
// transport's listener and connection handlers. Store.Close calls
// raft.Shutdown, which stops them all and closes the transport, then closes
// raft.db. Store.wait starts one short-lived goroutine per raft future it
// waits for with a context; it ends when raft resolves the future, which
// raft does at the latest at shutdown.
//
// The only lock is fsm.mu, which serializes publishing images; it is never
// held while calling out.
package metadata
