package config

import (
	"fmt"
	"log/slog"
	"slices"
)

// The enumerated settings are string types with the accepted values as
// constants. Each implements encoding.TextUnmarshaler, so a bad value in
// the file or an environment override stops Load at decoding, naming the
// key, the value and the choices; code compares the constants, so a value
// no branch handles cannot reach it. Validate checks them again for
// configs built in code, and for YAML scalars that are not strings (a
// number reaches a string field without the text hook).

// OnError is projections.<name>.on_error: what an event that cannot be
// mapped, or a row the sink rejects, does. Empty is OnErrorStop.
type OnError string

const (
	// OnErrorStop stops the projection (the default).
	OnErrorStop OnError = "stop"
	// OnErrorDLQ sends the record to the projection's dead-letter topic
	// and goes on.
	OnErrorDLQ OnError = "dlq"
)

// Check names a value outside the accepted ones and the choices.
func (v OnError) Check() error { return oneOf(v, "dlq or stop", "", OnErrorStop, OnErrorDLQ) }

// UnmarshalText accepts stop, dlq or empty.
func (v *OnError) UnmarshalText(b []byte) error { return setChecked(v, b) }

// SnapshotMode is source.snapshot.mode.
type SnapshotMode string

const (
	// SnapshotInitial snapshots every captured table on the first start
	// and a table added to source.tables later on the next start.
	SnapshotInitial SnapshotMode = "initial"
	// SnapshotNever starts at the end of the binlog only.
	SnapshotNever SnapshotMode = "never"
)

// Check names a value outside the accepted ones and the choices.
func (v SnapshotMode) Check() error {
	return oneOf(v, "initial or never", SnapshotInitial, SnapshotNever)
}

// UnmarshalText accepts initial or never.
func (v *SnapshotMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// TLSMode is source.tls.mode. There is no mode that falls back to
// plaintext.
type TLSMode string

const (
	// TLSDisabled connects in plaintext.
	TLSDisabled TLSMode = "disabled"
	// TLSVerifyCA verifies the server's certificate chain, not its name.
	TLSVerifyCA TLSMode = "verify_ca"
	// TLSVerifyIdentity verifies the chain and the host name.
	TLSVerifyIdentity TLSMode = "verify_identity"
)

// Check names a value outside the accepted ones and the choices.
func (v TLSMode) Check() error {
	return oneOf(v, "disabled, verify_ca or verify_identity", TLSDisabled, TLSVerifyCA, TLSVerifyIdentity)
}

// UnmarshalText accepts disabled, verify_ca or verify_identity.
func (v *TLSMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Flavor is source.flavor, in go-mysql's spelling. Empty detects it from
// the server's VERSION().
type Flavor string

const (
	// FlavorDetect takes the flavor the server reports.
	FlavorDetect  Flavor = ""
	FlavorMySQL   Flavor = "mysql"
	FlavorMariaDB Flavor = "mariadb"
)

// Check names a value outside the accepted ones and the choices.
func (v Flavor) Check() error {
	return oneOf(v, "mysql, mariadb or empty (detect)", FlavorDetect, FlavorMySQL, FlavorMariaDB)
}

// UnmarshalText accepts mysql, mariadb or empty.
func (v *Flavor) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Compression is kafka.compression, the codec of the tailer's record
// batches.
type Compression string

const (
	CompressionLZ4    Compression = "lz4"
	CompressionSnappy Compression = "snappy"
	CompressionZstd   Compression = "zstd"
	CompressionGzip   Compression = "gzip"
	CompressionNone   Compression = "none"
)

// Check names a value outside the accepted ones and the choices.
func (v Compression) Check() error {
	return oneOf(v, "lz4, snappy, zstd, gzip or none",
		CompressionLZ4, CompressionSnappy, CompressionZstd, CompressionGzip, CompressionNone)
}

// UnmarshalText accepts lz4, snappy, zstd, gzip or none.
func (v *Compression) UnmarshalText(b []byte) error { return setChecked(v, b) }

// LogLevel is log.level.
type LogLevel string

const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
)

// Check names a value outside the accepted ones and the choices.
func (v LogLevel) Check() error {
	return oneOf(v, "debug, info, warn or error", LogDebug, LogInfo, LogWarn, LogError)
}

// UnmarshalText accepts debug, info, warn or error.
func (v *LogLevel) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Slog is the level as log/slog has it; a value Validate would refuse
// reads as info.
func (v LogLevel) Slog() slog.Level {
	switch v {
	case LogDebug:
		return slog.LevelDebug
	case LogWarn:
		return slog.LevelWarn
	case LogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LogFormat is log.format.
type LogFormat string

const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// Check names a value outside the accepted ones and the choices.
func (v LogFormat) Check() error { return oneOf(v, "text or json", LogText, LogJSON) }

// UnmarshalText accepts text or json.
func (v *LogFormat) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Consistency is sinks.<name>.consistency: what a reader of the sink's
// read tables may see between source transactions. Empty is
// ConsistencyRow.
type Consistency string

const (
	// ConsistencyRow: every row is correct and converges; a reader may see
	// part of a source transaction (the default, and the fastest).
	ConsistencyRow Consistency = "row"
	// ConsistencyTransaction: every committed state of the sink's read
	// tables (per shard) is what the projections compute from the source
	// at one prefix of its committed transactions
	// (docs/design/consistent-sinks.md).
	ConsistencyTransaction Consistency = "transaction"
)

// Check names a value outside the accepted ones and the choices.
func (v Consistency) Check() error {
	return oneOf(v, "row or transaction", "", ConsistencyRow, ConsistencyTransaction)
}

// UnmarshalText accepts row, transaction or empty.
func (v *Consistency) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Transactional reports consistency: transaction.
func (v Consistency) Transactional() bool { return v == ConsistencyTransaction }

// oneOf reports v outside accepted as an error quoting it and saying what
// to write instead (want); the caller puts the key in front.
func oneOf[T ~string](v T, want string, accepted ...T) error {
	if slices.Contains(accepted, v) {
		return nil
	}
	return &choiceError{value: string(v), want: want}
}

// choiceError is a mode's value outside its choices. Load tells it from
// the decoder's other errors by this type, to name its key the way
// Validate does.
type choiceError struct{ value, want string }

func (e *choiceError) Error() string { return fmt.Sprintf("%q: want %s", e.value, e.want) }

// setChecked is every mode's UnmarshalText: it stores the text only when
// the type accepts it.
func setChecked[T interface {
	~string
	Check() error
}](dst *T, b []byte) error {
	v := T(b)
	if err := v.Check(); err != nil {
		return err
	}
	*dst = v
	return nil
}
