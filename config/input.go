package config

import (
	"fmt"
	"maps"
	"slices"
)

// InputKind is input.kind: whose topics the projectors read.
type InputKind string

const (
	// InputReadside reads the table topics readside's own tailer writes
	// (kafka.format says in which envelope), the default.
	InputReadside InputKind = "readside"
	// InputDebezium reads the topics Debezium's MySQL or MariaDB
	// connector writes under input.topic_prefix (docs/debezium.md, "Keep
	// Debezium and add read models").
	InputDebezium InputKind = "debezium"
)

// Check names a value outside the accepted ones and the choices.
func (v InputKind) Check() error {
	return oneOf(v, "readside or debezium", InputReadside, InputDebezium)
}

// UnmarshalText accepts readside or debezium.
func (v *InputKind) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Input is what the projectors read: readside's own topics, or those of a
// Debezium connector another deployment runs.
type Input struct {
	// Kind is readside (default) or debezium.
	Kind InputKind `koanf:"kind"`
	// TopicPrefix is the connector's topic.prefix: with kind debezium, a
	// table's topic is <topic_prefix>.<db>.<table> as Debezium names it.
	// Required with kind debezium, unset otherwise.
	TopicPrefix string `koanf:"topic_prefix"`
}

// ReadsDebezium reports whether the projectors read Debezium's envelope: from
// a connector (input.kind: debezium) or from readside's own tailer
// writing kafka.format: debezium.
func (c Config) ReadsDebezium() bool {
	return c.Input.Kind == InputDebezium || c.Kafka.Format == FormatDebezium
}

// TablePrefix is the prefix of the table topics the projectors read:
// input.topic_prefix with input.kind: debezium, else kafka.topic_prefix.
func (c Config) TablePrefix() string {
	if c.Input.Kind == InputDebezium {
		return c.Input.TopicPrefix
	}
	return c.Kafka.TopicPrefix
}

// inputErrors are input's problems and the combinations input.kind:
// debezium does not serve.
func (c Config) inputErrors() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	in := c.Input
	if err := in.Kind.Check(); err != nil {
		bad("input.kind %v", err)
		return errs
	}
	if in.Kind != InputDebezium {
		if in.TopicPrefix != "" {
			bad("input.topic_prefix %q is set and input.kind is %s: it names a Debezium connector's topics. Fix: set input.kind: debezium, or remove input.topic_prefix", in.TopicPrefix, in.Kind)
		}
		return errs
	}
	if !validTopicPart(in.TopicPrefix) {
		bad("input.topic_prefix %q: want the Debezium connector's topic.prefix (letters, digits, '.', '_' or '-'), e.g. dbserver1", in.TopicPrefix)
	}
	if c.Kafka.Format == FormatDebezium {
		bad("input.kind is debezium and kafka.format is debezium: a deployment reading a connector's topics runs no tailer of its own. Fix: remove kafka.format (the tailer's setting) from this config, or set input.kind: readside to read the tailer's own topics")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sinks)) {
		if c.Sinks[name].Consistency.Transactional() {
			// The cut comes from the tailer's checkpoint, which a
			// connector does not write.
			bad("sinks.%s.consistency is transaction and input.kind is debezium: transaction-consistent sinks commit up to cuts readside's tailer writes into its checkpoint, which a Debezium connector does not write. Fix: remove consistency (row-consistent sinks), or capture with readside's tailer (input.kind: readside)", name)
		}
	}
	return errs
}
