package config

import (
	"fmt"
	"testing"
)

func TestInputLoad(t *testing.T) {
	cases := []struct {
		why  string
		yaml string
		got  func(Config) any
		want any
	}{
		{"readside's own topics stay the default input", "", func(c Config) any { return c.Input.Kind }, InputReadside},
		{"… read under kafka.topic_prefix", "kafka: {topic_prefix: rs}\n", func(c Config) any { return c.TablePrefix() }, "rs"},
		{"… in readside's envelope", "", func(c Config) any { return c.ReadsDebezium() }, false},
		{"a connector's topics are read under its topic.prefix", "input: {kind: debezium, topic_prefix: dbserver1}\n", func(c Config) any { return c.TablePrefix() }, "dbserver1"},
		{"… in Debezium's envelope", "input: {kind: debezium, topic_prefix: dbserver1}\n", func(c Config) any { return c.ReadsDebezium() }, true},
		{"the tailer's own debezium topics are read in Debezium's envelope too", "kafka: {format: debezium}\n", func(c Config) any { return c.ReadsDebezium() }, true},
		{"… under kafka.topic_prefix", "kafka: {format: debezium, topic_prefix: own}\n", func(c Config) any { return c.TablePrefix() }, "own"},
		{"a connector's topics are JSON unless input.format says otherwise", "input: {kind: debezium, topic_prefix: d}\n", func(c Config) any { _, _, ok := c.ReadsAvro(); return ok }, false},
		{"a connector's Avro topics are read through input.schema_registry", "input: {kind: debezium, topic_prefix: d, format: avro, schema_registry: {url: \"http://r:8081\"}}\n",
			func(c Config) any { u, k, _ := c.ReadsAvro(); return u + " " + k }, "http://r:8081 input.schema_registry.url"},
		{"the tailer's own debezium-avro topics, projections included, through kafka.schema_registry", "kafka: {format: debezium-avro, schema_registry: {url: \"http://k:8081\"}}\nprojections: {p: {from: shop.orders}}\n",
			func(c Config) any { u, k, _ := c.ReadsAvro(); return u + " " + k }, "http://k:8081 kafka.schema_registry.url"},
		{"… in Debezium's envelope", "kafka: {format: debezium-avro, schema_registry: {url: \"http://k:8081\"}}\n", func(c Config) any { return c.ReadsDebezium() }, true},
		{"a connector's JSON carries the schema block unless input.debezium says otherwise", "input: {kind: debezium, topic_prefix: d}\n", func(c Config) any { _, _, ok := c.Schemaless(); return ok }, false},
		{"a connector's bare payloads are read under the modes input.debezium declares", "input: {kind: debezium, topic_prefix: d, debezium: {schemas.enable: false, time.precision.mode: connect}}\n",
			func(c Config) any {
				m, k, _ := c.Schemaless()
				return string(m.Time.Precision.Mode) + " " + string(m.Decimal.Handling.Mode) + " " + k
			}, "connect precise input.debezium"},
		{"projections over the tailer's own debezium topics without the schema block read them under kafka.debezium's modes", "kafka: {format: debezium, debezium: {schemas.enable: false}}\nprojections: {p: {from: shop.orders}}\n",
			func(c Config) any { _, k, ok := c.Schemaless(); return fmt.Sprint(k, " ", ok) }, "kafka.debezium true"},
		{"… not its Avro, whose schemas are in the registry", "kafka: {format: debezium-avro, schema_registry: {url: \"http://k:8081\"}, debezium: {schemas.enable: false}}\n",
			func(c Config) any { _, _, ok := c.Schemaless(); return ok }, false},
	}
	for _, c := range cases {
		cfg, err := Load(writeConfig(t, minimalNoBrokers+c.yaml), nil)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got := c.got(cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

func TestInputRefused(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"an input kind outside the two is named with the choices",
			minimalNoBrokers + "input: {kind: maxwell}\n", nil,
			[]string{`input.kind "maxwell": want readside or debezium`}},
		{"a connector's topics cannot be found without its topic.prefix",
			minimalNoBrokers + "input: {kind: debezium}\n", nil,
			[]string{`input.topic_prefix "": want the Debezium connector's topic.prefix`}},
		{"a topic prefix for readside's own topics would be ignored: refused",
			minimalNoBrokers + "input: {topic_prefix: dbserver1}\n", nil,
			[]string{`input.topic_prefix "dbserver1" is set and input.kind is readside`, "set input.kind: debezium"}},
		{"a deployment reading a connector's topics runs no tailer of its own, so no tailer format",
			minimalNoBrokers + "kafka: {format: debezium}\ninput: {kind: debezium, topic_prefix: d}\n", nil,
			[]string{"input.kind is debezium and kafka.format is debezium"}},
		{"transaction-consistent sinks need the tailer's checkpoint cuts, which a connector does not write",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d}\nsinks: {r: {dsn: \"u:p@tcp(h:1)/r\", consistency: transaction}}\n", nil,
			[]string{"sinks.r.consistency is transaction and input.kind is debezium", "remove consistency"}},
		{"… nor its Avro format",
			minimalNoBrokers + "kafka: {format: debezium-avro, schema_registry: {url: \"http://k:8081\"}}\ninput: {kind: debezium, topic_prefix: d}\n", nil,
			[]string{"input.kind is debezium and kafka.format is debezium-avro"}},
		{"input.debezium describes a connector's topics: with readside's own, refused naming kafka.debezium",
			minimalNoBrokers + "input: {debezium: {schemas.enable: false}}\n", nil,
			[]string{"input.debezium is set and input.kind is readside", "kafka.debezium"}},
		{"a mode outside Debezium's values is named with the choices",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, debezium: {decimal.handling.mode: exact}}\n", nil,
			[]string{`input.debezium.decimal.handling.mode "exact": want precise, double or string`}},
		{"bare payloads' binary values are read as the bytes mode writes them: other modes refused with the fix",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, debezium: {schemas.enable: false, binary.handling.mode: hex}}\n", nil,
			[]string{"input.debezium.binary.handling.mode is hex and input.debezium.schemas.enable is false", "binary.handling.mode=bytes"}},
		{"Avro records always name their schema: schemas.enable is the JSON converter's",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, format: avro, schema_registry: {url: \"http://r:8081\"}, debezium: {schemas.enable: false}}\n", nil,
			[]string{"input.debezium.schemas.enable is false and input.format is avro"}},
		{"an input format outside the two is named with the choices",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, format: protobuf}\n", nil,
			[]string{`input.format "protobuf": want json or avro`}},
		{"Avro topics name their schemas by id in a registry: without one, refused with the connector setting to copy",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, format: avro}\n", nil,
			[]string{"input.format is avro and input.schema_registry.url is empty", "schema.registry.url"}},
		{"a registry URL that is not http(s) is named with an example",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, format: avro, schema_registry: {url: \"r:8081\"}}\n", nil,
			[]string{`input.schema_registry.url "r:8081" is not an http:// or https:// URL`}},
		{"a registry for JSON topics would be silently unused",
			minimalNoBrokers + "input: {kind: debezium, topic_prefix: d, schema_registry: {url: \"http://r:8081\"}}\n", nil,
			[]string{"input.schema_registry.url is set and input.format is json", "set input.format: avro"}},
		{"input.format is the connector's converter: refused for readside's own topics, naming kafka.format: debezium-avro",
			minimalNoBrokers + "input: {format: avro}\n", nil,
			[]string{"input.format is avro and input.kind is readside", "kafka.format: debezium-avro"}},
		{"… and so is input.schema_registry, naming kafka.schema_registry.url",
			minimalNoBrokers + "input: {schema_registry: {url: \"http://r:8081\"}}\n", nil,
			[]string{"input.schema_registry.url is set and input.kind is readside", "kafka.schema_registry.url"}},
	})
}
