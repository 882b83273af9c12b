package event

// The envelope's member names (docs/events.md, "Envelope"): the tailer
// writes them and readers look them up, so a rename is a wire-format
// change on both sides at once. A reader matching raw JSON member names
// writes them quoted (`"` + FieldOp + `"`), a constant expression.
const (
	FieldOp      = "op"
	FieldVersion = "version"
	FieldDB      = "db"
	FieldTable   = "table"
	FieldKey     = "key"
	FieldBefore  = "before"
	FieldAfter   = "after"
	FieldSource  = "source"
	FieldTxn     = "txn"
	FieldSchema  = "schema"
)

// Members of "source": where in the binlog the change was read.
const (
	SourceFlavor   = "flavor"
	SourceServerID = "server_id"
	SourceFile     = "file"
	SourcePos      = "pos"
	SourceGTID     = "gtid"
	SourceTSSec    = "ts_sec"
)

// Members of "txn" and "schema".
const (
	TxnID         = "id"
	TxnSeq        = "seq"
	SchemaVersion = "version"
	SchemaColumns = "columns"
)
