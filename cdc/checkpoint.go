package cdc

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Checkpoint is the tailer's durable state: the position after the last
// source transaction published and the version clock at that point. It is
// written to the checkpoint topic inside the same Kafka transaction as the
// events it covers, so it can never run ahead of (or behind) them.
type Checkpoint struct {
	Position    Position  `json:"position"`
	LastVersion uint64    `json:"last_version"`
	WrittenAt   time.Time `json:"written_at"`
	// Snapshots still to do, the first in progress.
	Snapshots []SnapshotTask `json:"snapshots,omitempty"`
	// Tables are the captured tables whose existing rows are covered
	// (cdc/snapshot_added.go); nil in checkpoints of older versions.
	Tables []string `json:"tables,omitempty"`
	// LastRequest is the id of the last snapshot request read from the
	// binlog: rows above it are not read yet (readside snapshot --pending).
	LastRequest uint64 `json:"last_request,omitempty"`
	// SchemaHistory: the schema history topic holds the schema as of
	// Position (the tailer kept it up to here).
	SchemaHistory bool `json:"schema_history,omitempty"`
	// The server the position was read from. A file/offset is only
	// meaningful there; a GTID set is valid on every server of the
	// replication topology.
	ServerID   uint32 `json:"server_id,omitempty"`
	ServerUUID string `json:"server_uuid,omitempty"` // MySQL only
}

// checkpointRecord is the stored form: the body plus a CRC32 of it, so a
// garbled record is refused instead of silently resuming from nonsense.
type checkpointRecord struct {
	Body  json.RawMessage `json:"checkpoint"`
	CRC32 uint32          `json:"crc32"`
}

// ErrCorruptCheckpoint means the stored checkpoint failed its checksum.
var ErrCorruptCheckpoint = errors.New("checkpoint is corrupt")

func encodeCheckpoint(c Checkpoint) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointRecord{Body: body, CRC32: crc32.ChecksumIEEE(body)})
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	var rec checkpointRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	if crc32.ChecksumIEEE(rec.Body) != rec.CRC32 {
		return Checkpoint{}, fmt.Errorf("%w: checksum mismatch", ErrCorruptCheckpoint)
	}
	var c Checkpoint
	if err := json.Unmarshal(rec.Body, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return c, nil
}
