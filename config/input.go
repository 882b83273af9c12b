package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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

// InputFormat is input.format: the converter a Debezium connector's
// topics were written with.
type InputFormat string

const (
	// InputJSON is Kafka Connect's JSON converter with its schema block
	// (schemas.enable=true), the default.
	InputJSON InputFormat = "json"
	// InputAvro is Confluent's AvroConverter: the Confluent wire format,
	// the writer schemas in input.schema_registry.
	InputAvro InputFormat = "avro"
)

// Check names a value outside the accepted ones and the choices.
func (v InputFormat) Check() error {
	return oneOf(v, "json or avro", InputJSON, InputAvro)
}

// UnmarshalText accepts json or avro.
func (v *InputFormat) UnmarshalText(b []byte) error { return setChecked(v, b) }

// Input is what the projectors read: readside's own topics, or those of a
// Debezium connector another deployment runs.
type Input struct {
	// Kind is readside (default) or debezium.
	Kind InputKind `koanf:"kind"`
	// TopicPrefix is the connector's topic.prefix: with kind debezium, a
	// table's topic is <topic_prefix>.<db>.<table> as Debezium names it.
	// Required with kind debezium, unset otherwise.
	TopicPrefix string `koanf:"topic_prefix"`
	// Format is the connector's value converter with kind debezium: json
	// (default; with its schema block) or avro (Confluent's AvroConverter).
	Format InputFormat `koanf:"format"`
	// SchemaRegistry is the registry the connector's AvroConverter
	// registers in (its schema.registry.url). Required with format avro,
	// refused otherwise.
	SchemaRegistry SchemaRegistry `koanf:"schema_registry"`
}

// ReadsAvro reports whether the projectors read Debezium's records in
// Avro, and the registry holding their schemas with the config key that
// names it: a connector's under input.schema_registry, readside's own
// tailer's (kafka.format: debezium-avro) under kafka.schema_registry.
func (c Config) ReadsAvro() (url, key string, ok bool) {
	switch {
	case c.Input.Kind == InputDebezium && c.Input.Format == InputAvro:
		return c.Input.SchemaRegistry.URL, "input.schema_registry.url", true
	case c.Input.Kind != InputDebezium && c.Kafka.Format == FormatDebeziumAvro:
		return c.Kafka.SchemaRegistry.URL, "kafka.schema_registry.url", true
	}
	return "", "", false
}

// ReadsDebezium reports whether the projectors read Debezium's envelope: from
// a connector (input.kind: debezium) or from readside's own tailer
// writing kafka.format: debezium or debezium-avro.
func (c Config) ReadsDebezium() bool {
	return c.Input.Kind == InputDebezium || c.Kafka.Format.Debezium()
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
	if err := in.Format.Check(); err != nil {
		bad("input.format %v", err)
	}
	u := strings.TrimSpace(in.SchemaRegistry.URL)
	if in.Kind != InputDebezium {
		if in.TopicPrefix != "" {
			bad("input.topic_prefix %q is set and input.kind is %s: it names a Debezium connector's topics. Fix: set input.kind: debezium, or remove input.topic_prefix", in.TopicPrefix, in.Kind)
		}
		if in.Format == InputAvro {
			bad("input.format is avro and input.kind is %s: input.format is the converter of a Debezium connector's topics; readside's own topics are Avro under kafka.format: debezium-avro. Fix: set input.kind: debezium, or remove input.format", in.Kind)
		}
		if u != "" {
			bad("input.schema_registry.url is set and input.kind is %s: it is the registry of a Debezium connector's Avro topics; readside's own debezium-avro topics use kafka.schema_registry.url. Fix: remove input.schema_registry, or set input.kind: debezium with input.format: avro", in.Kind)
		}
		return errs
	}
	switch {
	case in.Format == InputAvro && u == "":
		bad("input.format is avro and input.schema_registry.url is empty: the records name their writer's schema by an id in the connector's schema registry. Fix: set input.schema_registry.url to the connector's value.converter.schema.registry.url, e.g. http://registry:8081")
	case in.Format == InputAvro:
		if err := registryURLError("input.schema_registry.url", u); err != nil {
			errs = append(errs, err)
		}
	case u != "":
		bad("input.schema_registry.url is set and input.format is %s: only Avro topics name their schemas in a registry. Fix: set input.format: avro if the connector writes Avro (value.converter io.confluent.connect.avro.AvroConverter), or remove input.schema_registry", in.Format)
	}
	if !validTopicPart(in.TopicPrefix) {
		bad("input.topic_prefix %q: want the Debezium connector's topic.prefix (letters, digits, '.', '_' or '-'), e.g. dbserver1", in.TopicPrefix)
	}
	if c.Kafka.Format.Debezium() {
		bad("input.kind is debezium and kafka.format is %s: a deployment reading a connector's topics runs no tailer of its own. Fix: remove kafka.format (the tailer's setting) from this config, or set input.kind: readside to read the tailer's own topics", c.Kafka.Format)
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
