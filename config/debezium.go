package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// The settings of kafka.format: debezium keep Debezium's own names and
// values, so a connector's config carries over: YAML nests the dotted
// names ({decimal.handling.mode: precise} under kafka.debezium is
// kafka.debezium.decimal.handling.mode), which these structs spell out
// level by level.

// Format is kafka.format: the encoding of the tailer's table topics.
type Format string

const (
	// FormatReadside is readside's own envelope (docs/events.md), the
	// default.
	FormatReadside Format = "readside"
	// FormatDebezium is what Debezium's MariaDB/MySQL connector writes
	// with the JSON converter (docs/debezium.md).
	FormatDebezium Format = "debezium"
	// FormatDebeziumAvro is the same events in Avro, as Debezium writes
	// them with Confluent's AvroConverter: the Confluent wire format, the
	// schemas registered in kafka.schema_registry (docs/debezium.md).
	FormatDebeziumAvro Format = "debezium-avro"
)

// Check names a value outside the accepted ones and the choices.
func (v Format) Check() error {
	return oneOf(v, "readside, debezium or debezium-avro", FormatReadside, FormatDebezium, FormatDebeziumAvro)
}

// Debezium reports a format that writes Debezium's events, in JSON or
// Avro: everything but the value's bytes is the same for both.
func (v Format) Debezium() bool { return v == FormatDebezium || v == FormatDebeziumAvro }

// UnmarshalText accepts readside, debezium or debezium-avro.
func (v *Format) UnmarshalText(b []byte) error { return setChecked(v, b) }

// DecimalMode is Debezium's decimal.handling.mode.
type DecimalMode string

const (
	DecimalPrecise DecimalMode = "precise"
	DecimalDouble  DecimalMode = "double"
	DecimalString  DecimalMode = "string"
)

// Check names a value outside the accepted ones and the choices.
func (v DecimalMode) Check() error {
	return oneOf(v, "precise, double or string", DecimalPrecise, DecimalDouble, DecimalString)
}

// UnmarshalText accepts precise, double or string.
func (v *DecimalMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// TimePrecisionMode is Debezium's time.precision.mode.
type TimePrecisionMode string

const (
	TimeAdaptiveMicroseconds TimePrecisionMode = "adaptive_time_microseconds"
	TimeConnect              TimePrecisionMode = "connect"
)

// Check names a value outside the accepted ones and the choices.
func (v TimePrecisionMode) Check() error {
	return oneOf(v, "adaptive_time_microseconds or connect", TimeAdaptiveMicroseconds, TimeConnect)
}

// UnmarshalText accepts adaptive_time_microseconds or connect.
func (v *TimePrecisionMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// UnsignedMode is Debezium's bigint.unsigned.handling.mode.
type UnsignedMode string

const (
	// UnsignedLong wraps values of 2^63 and above to negative numbers, as
	// Debezium does by default.
	UnsignedLong UnsignedMode = "long"
	// UnsignedPrecise keeps every value, as a decimal of scale 0.
	UnsignedPrecise UnsignedMode = "precise"
)

// Check names a value outside the accepted ones and the choices.
func (v UnsignedMode) Check() error {
	return oneOf(v, "long or precise", UnsignedLong, UnsignedPrecise)
}

// UnmarshalText accepts long or precise.
func (v *UnsignedMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// BinaryMode is Debezium's binary.handling.mode.
type BinaryMode string

const (
	BinaryBytes         BinaryMode = "bytes"
	BinaryBase64        BinaryMode = "base64"
	BinaryBase64URLSafe BinaryMode = "base64-url-safe"
	BinaryHex           BinaryMode = "hex"
)

// Check names a value outside the accepted ones and the choices.
func (v BinaryMode) Check() error {
	return oneOf(v, "bytes, base64, base64-url-safe or hex", BinaryBytes, BinaryBase64, BinaryBase64URLSafe, BinaryHex)
}

// UnmarshalText accepts bytes, base64, base64-url-safe or hex.
func (v *BinaryMode) UnmarshalText(b []byte) error { return setChecked(v, b) }

// ValueModes is how Debezium encodes column values, under its own names:
// kafka.debezium (readside's tailer writing Debezium's events) and
// input.debezium (a connector's bare JSON payloads) both embed it,
// squashed, so the keys and their checks are the same in both.
type ValueModes struct {
	Decimal struct {
		Handling struct {
			Mode DecimalMode `koanf:"mode"`
		} `koanf:"handling"`
	} `koanf:"decimal"`
	Time struct {
		Precision struct {
			Mode TimePrecisionMode `koanf:"mode"`
		} `koanf:"precision"`
	} `koanf:"time"`
	Bigint struct {
		Unsigned struct {
			Handling struct {
				Mode UnsignedMode `koanf:"mode"`
			} `koanf:"handling"`
		} `koanf:"unsigned"`
	} `koanf:"bigint"`
	Binary struct {
		Handling struct {
			Mode BinaryMode `koanf:"mode"`
		} `koanf:"handling"`
	} `koanf:"binary"`
}

// defaultValueModes is Debezium's defaults.
func defaultValueModes() ValueModes {
	var m ValueModes
	m.Decimal.Handling.Mode = DecimalPrecise
	m.Time.Precision.Mode = TimeAdaptiveMicroseconds
	m.Bigint.Unsigned.Handling.Mode = UnsignedLong
	m.Binary.Handling.Mode = BinaryBytes
	return m
}

// errors are the modes' problems, each named under prefix (the key that
// embeds them, e.g. kafka.debezium).
func (m ValueModes) errors(prefix string) []error {
	var errs []error
	if err := m.Decimal.Handling.Mode.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%s.decimal.handling.mode %v", prefix, err))
	}
	if err := m.Time.Precision.Mode.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%s.time.precision.mode %v", prefix, err))
	}
	if err := m.Bigint.Unsigned.Handling.Mode.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%s.bigint.unsigned.handling.mode %v", prefix, err))
	}
	if err := m.Binary.Handling.Mode.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%s.binary.handling.mode %v", prefix, err))
	}
	return errs
}

// Debezium is kafka.debezium: how kafka.format: debezium encodes values,
// under Debezium's names.
type Debezium struct {
	ValueModes `koanf:",squash"`
	// Schemas is the JSON converter's schemas.enable: with it every key
	// and value is {"schema": ..., "payload": ...}.
	Schemas struct {
		Enable bool `koanf:"enable"`
	} `koanf:"schemas"`
	// Provide is provide.transaction.metadata: a transaction block in
	// every streamed change and BEGIN/END records on the transaction
	// topic.
	Provide struct {
		Transaction struct {
			Metadata bool `koanf:"metadata"`
		} `koanf:"transaction"`
	} `koanf:"provide"`
	// Topic is topic.transaction: the transaction topic is
	// <kafka.topic_prefix>.<topic.transaction>.
	Topic struct {
		Transaction string `koanf:"transaction"`
	} `koanf:"topic"`
}

// TransactionTopic is the topic of the BEGIN and END records under
// provide.transaction.metadata, named as Debezium names it (not rewritten:
// Debezium validates both parts as topic names).
func (k Kafka) TransactionTopic() string {
	return k.TopicPrefix + "." + k.Debezium.Topic.Transaction
}

// defaultDebezium is Debezium's own defaults (and the JSON converter's).
func defaultDebezium() Debezium {
	d := Debezium{ValueModes: defaultValueModes()}
	d.Schemas.Enable = true
	d.Topic.Transaction = "transaction"
	return d
}

// formatErrors are kafka.format and kafka.debezium's problems, and the
// combinations kafka.format: debezium does not serve.
func (c Config) formatErrors() []error {
	var errs []error
	bad := func(err error) { errs = append(errs, err) }
	k := c.Kafka
	if err := k.Format.Check(); err != nil {
		bad(fmt.Errorf("kafka.format %v", err))
	}
	d := k.Debezium
	errs = append(errs, d.ValueModes.errors("kafka.debezium")...)
	if !validTopicName(d.Topic.Transaction) {
		bad(fmt.Errorf("kafka.debezium.topic.transaction %q is not a Kafka topic name: the transaction topic is <kafka.topic_prefix>.<topic.transaction>. "+
			"Fix: use letters, digits, '.', '_' and '-' (Debezium's default: transaction)", d.Topic.Transaction))
	}
	errs = append(errs, c.registryErrors()...)
	if !k.Format.Debezium() {
		if d.Provide.Transaction.Metadata {
			bad(fmt.Errorf("kafka.debezium.provide.transaction.metadata is true and kafka.format is %s: the transaction block and topic are Debezium's. "+
				"Fix: set kafka.format: debezium or debezium-avro, or remove provide.transaction.metadata", k.Format))
		}
		return errs
	}
	if len(c.Projections) > 0 && d.Binary.Handling.Mode != BinaryBytes {
		// Only the bytes mode gives a binary column a schema type of its
		// own; under the others it is a string like any text column.
		bad(fmt.Errorf("kafka.format is debezium with kafka.debezium.binary.handling.mode %s and projections are declared: the projections cannot tell binary columns from text in that mode. "+
			"Fix: set kafka.debezium.binary.handling.mode: bytes (Debezium's default), or run the projections from a deployment with kafka.format: readside", d.Binary.Handling.Mode))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sinks)) {
		if c.Sinks[name].Consistency.Transactional() {
			// The tailer's checkpoint cut reads versions back from the
			// table topics, which Debezium's envelope does not carry.
			bad(fmt.Errorf("sinks.%s.consistency is transaction and kafka.format is %s: transaction-consistent sinks need readside's envelope. "+
				"Fix: set kafka.format: readside for the deployment that feeds the sink, or remove the sink from this config", name, k.Format))
		}
	}
	return errs
}

// validTopicName reports a name Kafka takes for a topic part: letters,
// digits, '.', '_' and '-', at most 249 characters.
func validTopicName(s string) bool {
	if s == "" || len(s) > 249 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SchemaRegistry is kafka.schema_registry: the Confluent-compatible
// schema registry kafka.format: debezium-avro registers its schemas in.
type SchemaRegistry struct {
	// URL is the registry's base URL, http:// or https://, as Confluent's
	// schema.registry.url (Apicurio: its ccompat API,
	// http://host:8080/apis/ccompat/v7). Required with debezium-avro.
	URL string `koanf:"url"`
}

// registryErrors are kafka.schema_registry's problems: required with
// debezium-avro, meaningless (and so refused) with any other format.
func (c Config) registryErrors() []error {
	k := c.Kafka
	u := strings.TrimSpace(k.SchemaRegistry.URL)
	switch {
	case k.Format != FormatDebeziumAvro && u != "":
		return []error{fmt.Errorf("kafka.schema_registry.url is set and kafka.format is %s: only debezium-avro uses a schema registry. Fix: set kafka.format: debezium-avro, or remove kafka.schema_registry", k.Format)}
	case k.Format != FormatDebeziumAvro:
		return nil
	case u == "":
		return []error{errors.New("kafka.format is debezium-avro and kafka.schema_registry.url is empty: the Avro schemas are registered in a Confluent-compatible schema registry. Fix: set kafka.schema_registry.url, e.g. http://127.0.0.1:8081 (Apicurio: http://host:8080/apis/ccompat/v7)")}
	}
	if err := registryURLError("kafka.schema_registry.url", u); err != nil {
		return []error{err}
	}
	return nil
}

// registryURLError is what makes u, the value of key, no registry's base
// URL.
func registryURLError(key, u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%s %q is not an http:// or https:// URL with a host. Fix: give the registry's base URL, e.g. http://127.0.0.1:8081", key, u)
	}
	return nil
}

// debeziumHook decodes kafka.debezium and input.debezium. YAML keeps a dotted key
// ({decimal.handling.mode: precise}) as one key, and an environment
// override nests it (READSIDE_KAFKA__DEBEZIUM__DECIMAL__HANDLING__MODE);
// the hook splits every dotted key into the nesting the struct has, so both
// spellings, and a mix, decode alike.
func debeziumHook(_, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(Debezium{}) && to != reflect.TypeOf(InputModes{}) {
		return data, nil
	}
	m, ok := data.(map[string]any)
	if !ok {
		return data, nil
	}
	return nestDotted(m), nil
}

// nestDotted rebuilds m with each dotted key split into nested maps.
func nestDotted(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = nestDotted(sub)
		}
		parts := strings.Split(k, ".")
		at := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := at[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				at[p] = next
			}
			at = next
		}
		last := parts[len(parts)-1]
		if prev, ok := at[last].(map[string]any); ok {
			if sub, ok := v.(map[string]any); ok {
				for sk, sv := range sub {
					prev[sk] = sv
				}
				continue
			}
		}
		at[last] = v
	}
	return out
}
