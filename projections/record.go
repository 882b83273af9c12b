package projections

// Record is a Kafka record as the projection layer reads it: where it sits
// and its bytes. The consumer runtime (projector/) fills it from its Kafka
// client's records; the writes a record maps to carry it (From) so a write
// the sink rejects can be dead-lettered with its source's coordinates and
// bytes. It keeps this layer, and the sinks, verify and shards that import
// it, free of the Kafka client.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte // nil: a Kafka tombstone (kafkaTombstone)
	// KeyMoved: the record carries Debezium's __debezium.oldkey header,
	// the create half of a primary key change (Build).
	KeyMoved bool
}
