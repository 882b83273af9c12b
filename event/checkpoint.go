package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Cut is what a reader of the checkpoint topic needs from one of the
// tailer's checkpoints (the tailer's own type is cdc.Checkpoint, a
// superset): where the source was and where every partition of the table
// topics ended when the checkpoint's Kafka transaction committed. A
// transaction-consistent sink applies exactly the records below
// Published and calls the result the source's state at Position
// (docs/design/consistent-sinks.md).
type Cut struct {
	Position CutPosition `json:"position"`
	// WrittenAt is when the tailer wrote the checkpoint: it had read the
	// source up to Position then (an idle source's freshness proof).
	WrittenAt time.Time `json:"written_at"`
	// SourceTS is the source commit time (Unix seconds) of the last
	// source transaction the checkpoint covers; 0 when unknown.
	SourceTS int64 `json:"source_ts,omitempty"`
	// Transactions counts the source transactions the tailer has
	// published up to the checkpoint, since its first start.
	Transactions uint64 `json:"transactions,omitempty"`
	// Published is, per table topic and partition, the offset after the
	// last record the tailer published there up to and including this
	// checkpoint: every partition it ever wrote, not only this
	// transaction's. nil when no sink asked for it (checkpoints of a
	// tailer without a transactional sink, or of older versions).
	Published Offsets `json:"published,omitempty"`
	// InitialLoad is set while the initial snapshot of some captured table
	// is not complete (only the fields a reader needs).
	InitialLoad *struct {
		CompletedAt *time.Time `json:"completed_at,omitempty"`
	} `json:"initial_load,omitempty"`
}

// CutPosition is the source position of a cut.
type CutPosition struct {
	Flavor string `json:"flavor"`
	GTID   string `json:"gtid"` // GTID set; MariaDB: one domain-server-seq per domain
	File   string `json:"file"`
	Pos    uint32 `json:"pos"`
}

// Loading reports an initial load still under way: some table holds only
// the chunks read so far.
func (c Cut) Loading() bool { return c.InitialLoad != nil && c.InitialLoad.CompletedAt == nil }

// CheckpointEnvelope is the stored form of a checkpoint: the body plus a
// CRC32 of it, so a garbled record is refused instead of silently
// resuming from (or applying up to) nonsense.
type CheckpointEnvelope struct {
	Body  json.RawMessage `json:"checkpoint"`
	CRC32 uint32          `json:"crc32"`
}

// ErrCorruptCheckpoint means a stored checkpoint failed its checksum.
var ErrCorruptCheckpoint = errors.New("checkpoint is corrupt")

// SealCheckpoint wraps a checkpoint's JSON body in its envelope.
func SealCheckpoint(body []byte) ([]byte, error) {
	return json.Marshal(CheckpointEnvelope{Body: body, CRC32: crc32.ChecksumIEEE(body)})
}

// OpenCheckpoint returns a stored checkpoint's body once its checksum holds.
func OpenCheckpoint(b []byte) (json.RawMessage, error) {
	var rec CheckpointEnvelope
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	if crc32.ChecksumIEEE(rec.Body) != rec.CRC32 {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorruptCheckpoint)
	}
	return rec.Body, nil
}

// DecodeCut reads a stored checkpoint as a cut.
func DecodeCut(b []byte) (Cut, error) {
	body, err := OpenCheckpoint(b)
	if err != nil {
		return Cut{}, err
	}
	var c Cut
	if err := json.Unmarshal(body, &c); err != nil {
		return Cut{}, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return c, nil
}
