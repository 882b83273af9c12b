package event

// The names a deployment's components meet on besides the table topics
// (TopicFor). All of them start with kafka.topic_prefix, which is what
// tells deployments sharing one broker apart: two deployments with the
// same prefix would already share their table topics.

// CheckpointTopic is the compacted topic of the tailers' checkpoints,
// keyed by transactional id (docs/events.md, "Checkpoints").
func CheckpointTopic(prefix string) string { return prefix + "._readside_checkpoints" }

// SchemaHistoryTopic is where tailers without binlog_row_metadata=FULL keep
// their schema history: a compacted topic, one record per tracked table
// (and per tracked database, for its default charset), keyed by the
// tailer's transactional id. Records are written in the same Kafka
// transaction as the checkpoint that moves past the DDL (or snapshot) they
// describe, so the last committed record per key is the schema at the
// committed checkpoint.
func SchemaHistoryTopic(prefix string) string { return prefix + "._readside_schema_history" }

// DLQTopic is where a projection's rejected rows go (on_error: dlq). The
// projection name is a YAML key and may hold anything, so it goes through
// the topic-name mapping as the table of a pair; plain names keep
// <prefix>._readside_dlq.<name>.
func DLQTopic(prefix, projection string) string {
	return TopicFor(prefix, "_readside_dlq", projection)
}

// Group is the consumer group of a projection's projectors. The group
// only deals partitions out among the processes running the projection
// (their offsets are in the sink, _readside_offsets), so exactly the
// replicas of one deployment must share it: it is named by the
// deployment's prefix and the projection. A same-named projection of a
// deployment with another prefix on the same broker is in another group:
// in one shared group every start or stop of either deployment's
// projectors would rebalance the other's, each would report the other's
// members, and two static members with one group_instance_id (the host
// name by default) would fence each other. The default prefix "readside"
// gives
// readside-projection-<name>. Group ids take any string, so nothing is
// escaped: for one projection name, different prefixes always give
// different groups.
func Group(prefix, projection string) string { return prefix + "-projection-" + projection }

// SinkGroup is the consumer group of a transaction-consistent sink's
// appliers: the member holding the checkpoint topic's one partition is the
// sink's active applier, the others wait to take over
// (docs/design/consistent-sinks.md).
func SinkGroup(prefix, sink string) string { return prefix + "-sink-" + sink }
