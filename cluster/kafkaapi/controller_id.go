package kafkaapi

// advertisedControllerID is the controller id that Metadata and
// DescribeCluster give clients, who send it the requests Kafka routes to
// the controller (CreateTopics, DeleteTopics, AlterPartitionReassignments,
// ...): it must be a broker they can reach. That is the active controller
// when it is one of the unfenced brokers listed in the response (a node
// that is broker and controller). Otherwise, as Kafka's KRaft brokers do
// (the controllers of a dedicated quorum have no client listener), it is
// a listed broker, which forwards the request to the active controller.
// Kafka picks one at random for every response; this picks the lowest id,
// so that every broker with the same image gives the same answer and a
// client does not see the controller change on each metadata refresh.
// -1 when no broker is listed.
func advertisedControllerID(active int32, listed []int32) int32 {
	id := int32(-1)
	for _, b := range listed {
		if b == active {
			return active
		}
		if id < 0 || b < id {
			id = b
		}
	}
	return id
}
