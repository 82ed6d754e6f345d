package cluster

// apiVersionsKey is special in the connection code: its response header
// never carries tagged fields and an unsupported version is answered.
const apiVersionsKey = 18

// apis is the dispatch table: every API this broker serves and the
// version range it advertises. ApiVersions is built from it. The ranges
// are those of a Kafka 4.x broker, so current clients find what they need.
func (n *Node) apis() []api {
	return []api{
		{key: 0, min: 0, max: 11, handle: n.handleProduce},
		{key: 1, min: 4, max: 12, handle: n.handleFetch},
		{key: 2, min: 1, max: 7, handle: n.handleListOffsets},
		{key: 3, min: 0, max: 12, handle: n.handleMetadata},
		{key: 8, min: 2, max: 9, handle: n.handleOffsetCommit},
		{key: 9, min: 1, max: 9, handle: n.handleOffsetFetch},
		{key: 10, min: 0, max: 6, handle: n.handleFindCoordinator},
		{key: 11, min: 0, max: 9, handle: n.handleJoinGroup},
		{key: 12, min: 0, max: 4, handle: n.handleHeartbeat},
		{key: 13, min: 0, max: 5, handle: n.handleLeaveGroup},
		{key: 14, min: 0, max: 5, handle: n.handleSyncGroup},
		{key: 15, min: 0, max: 5, handle: n.handleDescribeGroups},
		{key: 16, min: 0, max: 5, handle: n.handleListGroups},
		{key: apiVersionsKey, min: 0, max: 4, handle: n.handleApiVersions},
		{key: 19, min: 2, max: 7, handle: n.handleCreateTopics},
		{key: 20, min: 1, max: 6, handle: n.handleDeleteTopics},
		{key: 21, min: 0, max: 2, handle: n.handleDeleteRecords},
		{key: 22, min: 0, max: 4, handle: n.handleInitProducerID},
		{key: 23, min: 0, max: 4, handle: n.handleOffsetForLeaderEpoch},
		{key: 32, min: 1, max: 4, handle: n.handleDescribeConfigs},
		{key: 37, min: 0, max: 3, handle: n.handleCreatePartitions},
		{key: 42, min: 0, max: 2, handle: n.handleDeleteGroups},
		{key: 44, min: 0, max: 1, handle: n.handleIncrementalAlterConfigs},
		{key: 47, min: 0, max: 0, handle: n.handleOffsetDelete},
		{key: 60, min: 0, max: 1, handle: n.handleDescribeCluster},
	}
}
