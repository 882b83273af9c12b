package config

import (
	"strings"
	"testing"
)

func TestDebeziumSettingsLoad(t *testing.T) {
	cases := []struct {
		why  string
		yaml string
		env  []string
		got  func(Config) any
		want any
	}{
		{"readside's envelope stays the default format", "", nil, func(c Config) any { return c.Kafka.Format }, FormatReadside},
		{"Debezium's defaults are the defaults: precise decimals", "", nil, func(c Config) any { return c.Kafka.Debezium.Decimal.Handling.Mode }, DecimalPrecise},
		{"… adaptive_time_microseconds", "", nil, func(c Config) any { return c.Kafka.Debezium.Time.Precision.Mode }, TimeAdaptiveMicroseconds},
		{"… long (the unsigned wrap)", "", nil, func(c Config) any { return c.Kafka.Debezium.Bigint.Unsigned.Handling.Mode }, UnsignedLong},
		{"… bytes", "", nil, func(c Config) any { return c.Kafka.Debezium.Binary.Handling.Mode }, BinaryBytes},
		{"… and the JSON converter's schemas.enable=true", "", nil, func(c Config) any { return c.Kafka.Debezium.Schemas.Enable }, true},
		{"debezium is a format", "kafka: {format: debezium}", nil, func(c Config) any { return c.Kafka.Format }, FormatDebezium},
		{"debezium-avro is a format, with the registry it needs", "kafka: {format: debezium-avro, schema_registry: {url: \"http://127.0.0.1:8081\"}}", nil,
			func(c Config) any { return c.Kafka.SchemaRegistry.URL }, "http://127.0.0.1:8081"},
		{"Debezium's dotted names are written as Debezium writes them",
			"kafka:\n  debezium:\n    decimal.handling.mode: string\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Decimal.Handling.Mode }, DecimalString},
		{"… time.precision.mode", "kafka:\n  debezium:\n    time.precision.mode: connect\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Time.Precision.Mode }, TimeConnect},
		{"… bigint.unsigned.handling.mode", "kafka:\n  debezium:\n    bigint.unsigned.handling.mode: precise\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Bigint.Unsigned.Handling.Mode }, UnsignedPrecise},
		{"… binary.handling.mode with its dashes", "kafka:\n  debezium:\n    binary.handling.mode: base64-url-safe\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Binary.Handling.Mode }, BinaryBase64URLSafe},
		{"… schemas.enable", "kafka:\n  debezium:\n    schemas.enable: false\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Schemas.Enable }, false},
		{"provide.transaction.metadata is off by default, as in Debezium", "", nil,
			func(c Config) any { return c.Kafka.Debezium.Provide.Transaction.Metadata }, false},
		{"… and on under Debezium's name", "kafka:\n  format: debezium\n  debezium:\n    provide.transaction.metadata: true\n", nil,
			func(c Config) any { return c.Kafka.Debezium.Provide.Transaction.Metadata }, true},
		{"the transaction topic is <topic_prefix>.transaction by default, as Debezium's topic.transaction", "kafka: {topic_prefix: dbserver1}", nil,
			func(c Config) any { return c.Kafka.TransactionTopic() }, "dbserver1.transaction"},
		{"… and topic.transaction names its last part", "kafka:\n  topic_prefix: dbserver1\n  debezium:\n    topic.transaction: tx.of.server\n", nil,
			func(c Config) any { return c.Kafka.TransactionTopic() }, "dbserver1.tx.of.server"},
		{"an environment override nests the dotted name like any other key", "",
			[]string{"READSIDE_KAFKA__DEBEZIUM__DECIMAL__HANDLING__MODE=double"},
			func(c Config) any { return c.Kafka.Debezium.Decimal.Handling.Mode }, DecimalDouble},
	}
	for _, c := range cases {
		cfg, err := Load(writeConfig(t, minimalNoBrokers+c.yaml+"\n"), c.env)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got := c.got(cfg); got != c.want {
			t.Errorf("%s: loaded %v, want %v", c.why, got, c.want)
		}
	}
}

func TestDebeziumSettingsRefused(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"a format outside the two is named with the choices",
			minimalNoBrokers + "kafka: {format: avro}\n", nil,
			[]string{`kafka.format "avro": want readside, debezium or debezium-avro`}},
		{"Debezium's values only, spelled as Debezium spells them",
			minimalNoBrokers + "kafka:\n  debezium:\n    decimal.handling.mode: PRECISE\n    time.precision.mode: adaptive\n    bigint.unsigned.handling.mode: string\n    binary.handling.mode: base32\n", nil,
			[]string{`kafka.debezium.decimal.handling.mode "PRECISE": want precise, double or string`,
				`kafka.debezium.time.precision.mode "adaptive": want adaptive_time_microseconds or connect`,
				`kafka.debezium.bigint.unsigned.handling.mode "string": want long or precise`,
				`kafka.debezium.binary.handling.mode "base32": want bytes, base64, base64-url-safe or hex`}},
		{"a Debezium setting readside does not implement is an unknown key, not silently ignored",
			minimalNoBrokers + "kafka:\n  debezium:\n    snapshot.mode: initial\n", nil,
			[]string{"kafka.debezium has unknown keys: snapshot"}},
		{"… and binary columns are strings like text under every binary mode but bytes",
			minimalNoBrokers + "kafka: {format: debezium, debezium: {binary.handling.mode: hex}}\nprojections: {p: {from: shop.orders}}\n", nil,
			[]string{"binary.handling.mode hex and projections are declared", "binary.handling.mode: bytes"}},
		{"transaction metadata is Debezium's: with readside's envelope it would be silently unused",
			minimalNoBrokers + "kafka:\n  debezium:\n    provide.transaction.metadata: true\n", nil,
			[]string{"kafka.debezium.provide.transaction.metadata is true and kafka.format is readside", "Fix: set kafka.format: debezium"}},
		{"a transaction topic name Kafka refuses is named with the characters it takes",
			minimalNoBrokers + "kafka:\n  format: debezium\n  debezium:\n    topic.transaction: \"tx/log\"\n", nil,
			[]string{`kafka.debezium.topic.transaction "tx/log" is not a Kafka topic name`}},
		{"a transaction-consistent sink needs the versions readside's envelope carries",
			minimalNoBrokers + "kafka: {format: debezium}\nsinks: {r: {dsn: \"u:p@tcp(h:1)/r\", consistency: transaction}}\n", nil,
			[]string{"sinks.r.consistency is transaction and kafka.format is debezium"}},
		{"debezium-avro without a registry has nowhere to register its schemas",
			minimalNoBrokers + "kafka: {format: debezium-avro}\n", nil,
			[]string{"kafka.format is debezium-avro and kafka.schema_registry.url is empty", "Fix: set kafka.schema_registry.url"}},
		{"a registry URL that is not http(s) is named with an example",
			minimalNoBrokers + "kafka: {format: debezium-avro, schema_registry: {url: \"127.0.0.1:8081\"}}\n", nil,
			[]string{`kafka.schema_registry.url "127.0.0.1:8081" is not an http:// or https:// URL`}},
		{"a registry with another format would be silently unused",
			minimalNoBrokers + "kafka: {format: debezium, schema_registry: {url: \"http://r:8081\"}}\n", nil,
			[]string{"kafka.schema_registry.url is set and kafka.format is debezium", "set kafka.format: debezium-avro"}},
		{"projections over the tailer's debezium-avro topics tell binary from text only under the bytes mode, as over JSON",
			minimalNoBrokers + "kafka: {format: debezium-avro, schema_registry: {url: \"http://r:8081\"}, debezium: {binary.handling.mode: hex}}\nprojections: {p: {from: shop.orders}}\n", nil,
			[]string{"binary.handling.mode hex and projections are declared", "binary.handling.mode: bytes"}},
	})
}

// TestValueModeKeys: kafka.debezium and input.debezium share one
// ValueModes struct (embedded, squashed); each mode must still be the key
// users write under both prefixes, in YAML's dotted and nested spellings
// and as an environment override.
func TestValueModeKeys(t *testing.T) {
	modes := []struct {
		key, val string
		got      func(ValueModes) string
	}{
		{"decimal.handling.mode", "string", func(m ValueModes) string { return string(m.Decimal.Handling.Mode) }},
		{"time.precision.mode", "connect", func(m ValueModes) string { return string(m.Time.Precision.Mode) }},
		{"bigint.unsigned.handling.mode", "precise", func(m ValueModes) string { return string(m.Bigint.Unsigned.Handling.Mode) }},
		{"binary.handling.mode", "hex", func(m ValueModes) string { return string(m.Binary.Handling.Mode) }},
	}
	prefixes := []struct {
		top, sub, extra string
		of              func(Config) ValueModes
	}{
		{"kafka", "debezium", "", func(c Config) ValueModes { return c.Kafka.Debezium.ValueModes }},
		{"input", "debezium", "  kind: debezium\n  topic_prefix: d\n", func(c Config) ValueModes { return c.Input.Debezium.ValueModes }},
	}
	for _, p := range prefixes {
		for _, m := range modes {
			nested := ""
			indent := "    "
			parts := strings.Split(m.key, ".")
			for i, part := range parts {
				nested += indent + part + ":"
				if i == len(parts)-1 {
					nested += " " + m.val
				}
				nested += "\n"
				indent += "  "
			}
			env := "READSIDE_" + strings.ToUpper(p.top+"__"+p.sub+"__"+strings.ReplaceAll(m.key, ".", "__")) + "=" + m.val
			spellings := []struct {
				why  string
				yaml string
				env  []string
			}{
				{"Debezium's dotted name, as a connector's config writes it", p.top + ":\n" + p.extra + "  " + p.sub + ":\n    " + m.key + ": " + m.val + "\n", nil},
				{"the same key nested level by level", p.top + ":\n" + p.extra + "  " + p.sub + ":\n" + nested, nil},
				{"an environment override", p.top + ":\n" + p.extra + "  " + p.sub + ": {}\n", []string{env}},
			}
			for _, s := range spellings {
				cfg, err := Load(writeConfig(t, minimalNoBrokers+s.yaml), s.env)
				if err != nil {
					t.Errorf("%s.%s.%s, %s: %v", p.top, p.sub, m.key, s.why, err)
					continue
				}
				if got := m.got(p.of(cfg)); got != m.val {
					t.Errorf("%s.%s.%s, %s: loaded %q, want %q", p.top, p.sub, m.key, s.why, got, m.val)
				}
			}
		}
	}
}
