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
	// Debezium is the connector's settings that its records do not name
	// when the JSON converter writes them without the schema block.
	Debezium InputModes `koanf:"debezium"`
}

// InputModes is input.debezium: with kind debezium and format json,
// whether the connector's JSON converter writes the schema block and,
// when it does not, the value modes the connector runs with, under
// Debezium's own names (as kafka.debezium spells them), for the column
// types then come from the source's live schema (docs/debezium.md,
// "Topics without the schema block").
type InputModes struct {
	// Schemas is the JSON converter's schemas.enable (default true).
	// False: records are bare payloads and each column's type is read
	// from information_schema over source.dsn.
	Schemas struct {
		Enable bool `koanf:"enable"`
	} `koanf:"schemas"`
	ValueModes `koanf:",squash"`
}

// defaultInputDebezium is Debezium's defaults and the JSON converter's.
func defaultInputDebezium() InputModes {
	d := InputModes{ValueModes: defaultValueModes()}
	d.Schemas.Enable = true
	return d
}

// Schemaless reports whether the projectors read Debezium's JSON records
// without the schema block, and the value modes their writer used with
// the config key that holds them: a connector's under input.debezium,
// readside's own tailer's under kafka.debezium.
func (c Config) Schemaless() (modes Debezium, key string, ok bool) {
	switch {
	case c.Input.Kind == InputDebezium && c.Input.Format == InputJSON && !c.Input.Debezium.Schemas.Enable:
		modes = defaultDebezium()
		modes.Schemas.Enable = false
		modes.ValueModes = c.Input.Debezium.ValueModes
		return modes, "input.debezium", true
	case c.Input.Kind != InputDebezium && c.Kafka.Format == FormatDebezium && !c.Kafka.Debezium.Schemas.Enable:
		return c.Kafka.Debezium, "kafka.debezium", true
	}
	return Debezium{}, "", false
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
		if in.Debezium != defaultInputDebezium() {
			bad("input.debezium is set and input.kind is %s: it describes a Debezium connector's topics; readside's own debezium topics are described by kafka.debezium. Fix: set input.kind: debezium, or remove input.debezium", in.Kind)
		}
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
	errs = append(errs, in.debeziumErrors()...)
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

// debeziumErrors are input.debezium's problems with input.kind: debezium.
func (in Input) debeziumErrors() []error {
	d := in.Debezium
	errs := d.ValueModes.errors("input.debezium")
	if !d.Schemas.Enable && in.Format == InputAvro {
		errs = append(errs, fmt.Errorf("input.debezium.schemas.enable is false and input.format is avro: it is the JSON converter's setting; Avro records always name their schema. Fix: remove input.debezium.schemas.enable"))
	}
	if !d.Schemas.Enable && d.Binary.Handling.Mode != BinaryBytes {
		// Under the other modes a binary value is text the schema block
		// would not type either, and decoding it needs a conversion
		// readside does not make.
		errs = append(errs, fmt.Errorf("input.debezium.binary.handling.mode is %s and input.debezium.schemas.enable is false: readside reads binary columns of bare payloads as Debezium's bytes mode writes them. "+
			"Fix: set binary.handling.mode=bytes on the connector (Debezium's default) and input.debezium.binary.handling.mode: bytes, or enable the converter's schema block", d.Binary.Handling.Mode))
	}
	return errs
}
