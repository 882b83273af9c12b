package config

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// minimalNoBrokers ends inside source:, so a case adds source keys with
// two spaces of indent and other keys with none.
const minimalNoBrokers = `
source:
  dsn: "repl:pw@tcp(127.0.0.1:3306)/"
  server_id: 4242
  tables: [shop.orders]
`

func TestModesRefuseBadValuesAtLoad(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"on_error is refused when the file loads, not when the projection starts",
			minimalNoBrokers + "projections:\n  orders:\n    on_error: ignore\n", nil,
			[]string{`projections.orders.on_error "ignore": want dlq or stop`}},
		{"snapshot.mode names both modes",
			minimalNoBrokers, []string{"READSIDE_SOURCE__SNAPSHOT__MODE=sometimes"},
			[]string{`source.snapshot.mode "sometimes": want initial or never`}},
		{"tls.mode has no plaintext-fallback mode to ask for",
			minimalNoBrokers + "  tls: {mode: preferred}\n", nil,
			[]string{`source.tls.mode "preferred": want disabled, verify_ca or verify_identity`}},
		{"flavor names the empty value too",
			minimalNoBrokers, []string{"READSIDE_SOURCE__FLAVOR=percona"},
			[]string{`source.flavor "percona": want mysql, mariadb or empty (detect)`}},
		{"log.level takes slog's names in lower case only, as documented",
			minimalNoBrokers + "log: {level: DEBUG}\n", nil,
			[]string{`log.level "DEBUG": want debug, info, warn or error`}},
		{"log.format names both formats",
			minimalNoBrokers + "log: {format: xml}\n", nil,
			[]string{`log.format "xml": want text or json`}},
		{"compression is case-sensitive like every mode",
			minimalNoBrokers + "kafka: {compression: LZ4}\n", nil,
			[]string{`kafka.compression "LZ4": want lz4, snappy, zstd, gzip or none`}},
		{"an empty mode is refused where no default means empty",
			minimalNoBrokers + "  snapshot: {mode: \"\"}\n", nil,
			[]string{`source.snapshot.mode "": want initial or never`}},
		{"a number reaches a mode without the text hook and is still refused",
			minimalNoBrokers + "log: {level: 3}\n", nil,
			[]string{`log.level "3": want debug, info, warn or error`}},
		{"consistency names both guarantees",
			minimalNoBrokers + "sinks:\n  reads:\n    dsn: \"u:p@tcp(h:1)/r\"\n    consistency: serializable\n", nil,
			[]string{`sinks.reads.consistency "serializable": want row or transaction`}},
		{"bad modes are reported with every other problem at once",
			strings.Replace(minimalNoBrokers, "4242", "0", 1) + "log: {format: xml, level: loud}\n", nil,
			[]string{`log.format "xml"`, `log.level "loud"`, "source.server_id is 0"}},
	})
}

func TestModesLoadTheirValues(t *testing.T) {
	cases := []struct {
		why  string
		yaml string
		got  func(Config) any
		want any
	}{
		{"the defaults are the documented ones: initial", "", func(c Config) any { return c.Source.Snapshot.Mode }, SnapshotInitial},
		{"… disabled", "", func(c Config) any { return c.Source.TLS.Mode }, TLSDisabled},
		{"… detect", "", func(c Config) any { return c.Source.Flavor }, FlavorDetect},
		{"… lz4", "", func(c Config) any { return c.Kafka.Compression }, CompressionLZ4},
		{"… info", "", func(c Config) any { return c.Log.Level }, LogInfo},
		{"… text", "", func(c Config) any { return c.Log.Format }, LogText},
		{"never: the binlog's end only", "  snapshot: {mode: never}", func(c Config) any { return c.Source.Snapshot.Mode }, SnapshotNever},
		{"verify_ca: the chain, not the name", "  tls: {mode: verify_ca}", func(c Config) any { return c.Source.TLS.Mode }, TLSVerifyCA},
		{"verify_identity: the chain and the name", "  tls: {mode: verify_identity}", func(c Config) any { return c.Source.TLS.Mode }, TLSVerifyIdentity},
		{"mysql overrides detection", "  flavor: mysql", func(c Config) any { return c.Source.Flavor }, FlavorMySQL},
		{"mariadb overrides detection", "  flavor: mariadb", func(c Config) any { return c.Source.Flavor }, FlavorMariaDB},
		{"every codec kafka.compression documents: snappy", "kafka: {compression: snappy}", func(c Config) any { return c.Kafka.Compression }, CompressionSnappy},
		{"… zstd", "kafka: {compression: zstd}", func(c Config) any { return c.Kafka.Compression }, CompressionZstd},
		{"… gzip", "kafka: {compression: gzip}", func(c Config) any { return c.Kafka.Compression }, CompressionGzip},
		{"… none", "kafka: {compression: none}", func(c Config) any { return c.Kafka.Compression }, CompressionNone},
		{"every slog level: debug", "log: {level: debug}", func(c Config) any { return c.Log.Level }, LogDebug},
		{"… warn", "log: {level: warn}", func(c Config) any { return c.Log.Level }, LogWarn},
		{"… error", "log: {level: error}", func(c Config) any { return c.Log.Level }, LogError},
		{"json for log shippers", "log: {format: json}", func(c Config) any { return c.Log.Format }, LogJSON},
		{"row is the default guarantee of a sink", "sinks: {r: {dsn: \"u:p@tcp(h:1)/r\"}}", func(c Config) any { return c.Sinks["r"].Consistency.Transactional() }, false},
		{"transaction: whole source transactions, in order", "sinks: {r: {dsn: \"u:p@tcp(h:1)/r\", consistency: transaction}}", func(c Config) any { return c.Sinks["r"].Consistency }, ConsistencyTransaction},
		{"dlq dead-letters", "projections: {p: {on_error: dlq}}", func(c Config) any { return c.Projections["p"].OnError }, OnErrorDLQ},
		{"stop may be written out", "projections: {p: {on_error: stop}}", func(c Config) any { return c.Projections["p"].OnError }, OnErrorStop},
		{"on_error may be left empty: the projection then stops", "projections: {p: {on_error: \"\"}}", func(c Config) any { return c.Projections["p"].OnError }, OnError("")},
	}
	for _, c := range cases {
		cfg, err := Load(writeConfig(t, minimalNoBrokers+c.yaml+"\n"), nil)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got := c.got(cfg); got != c.want {
			t.Errorf("%s: loaded %v, want %v", c.why, got, c.want)
		}
	}
}

func TestValidateChecksModesOfConfigsBuiltInCode(t *testing.T) {
	c := Default()
	c.Source.Snapshot.Mode = "sometimes"
	c.Kafka.Compression = ""
	err := c.Validate()
	for _, w := range []string{`source.snapshot.mode "sometimes"`, `kafka.compression ""`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate: %v, want %q", err, w)
		}
	}
}

func TestLogLevelSlog(t *testing.T) {
	cases := []struct {
		why   string
		level LogLevel
		want  slog.Level
	}{
		{"debug shows the Kafka client's chatter", LogDebug, slog.LevelDebug},
		{"info is the default", LogInfo, slog.LevelInfo},
		{"warn is what the rebuild's quiet logger uses", LogWarn, slog.LevelWarn},
		{"error is the quietest", LogError, slog.LevelError},
	}
	for _, c := range cases {
		if got := c.level.Slog(); got != c.want {
			t.Errorf("%s: %s.Slog() = %v, want %v", c.why, c.level, got, c.want)
		}
	}
}

// TestBadValueKeepsItsMapEntry: a sink or projection entry holding a bad
// mode value or an unknown key is still in the Invalid config (the bad
// value at its default, the rest decoded), so `check` does not also tell
// the projections naming the sink that it does not exist.
func TestBadValueKeepsItsMapEntry(t *testing.T) {
	yaml := minimalNoBrokers + "sinks:\n  reads:\n    dsn: \"u:p@tcp(h:1)/r\"\n    consistency: transactional\n  other:\n    dsn: \"u:p@tcp(h:1)/o\"\n    colour: red\n" +
		"projections:\n  p:\n    from: shop.orders\n    sink: reads\n    on_error: ignore\n"
	_, err := Load(writeConfig(t, yaml), nil)
	var inv *Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("want an Invalid config, got %v", err)
	}
	for _, want := range []string{`sinks.reads.consistency "transactional"`, "sinks.other has unknown keys: colour", `projections.p.on_error "ignore"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the problems lack %q:\n%v", want, err)
		}
	}
	if s, ok := inv.Config.Sinks["reads"]; !ok || s.DSN.Reveal() != "u:p@tcp(h:1)/r" || s.Consistency.Transactional() {
		t.Errorf("sink reads with a bad consistency: %+v (present %v), want its dsn and the default consistency", s, ok)
	}
	if _, ok := inv.Config.Sinks["other"]; !ok {
		t.Error("sink other with an unknown key was left out")
	}
	if p, ok := inv.Config.Projections["p"]; !ok || p.Sink != "reads" {
		t.Errorf("projection p with a bad on_error: %+v (present %v)", p, ok)
	}
}

// TestDurationsNeedUnits: a bare number where a duration goes is refused,
// naming the key (YAML hands it over as an integer, which would be
// nanoseconds); 0 and a number with its unit load.
func TestDurationsNeedUnits(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"a bare number is not taken as nanoseconds",
			minimalNoBrokers + "  heartbeat_period: 5\nshutdown_timeout: 2.5\n", nil,
			[]string{`source.heartbeat_period: 5 has no unit, so it would be 5 nanoseconds: write the duration with its unit, e.g. "5s"`,
				`shutdown_timeout: 2.5 has no unit`}},
	})
	cfg, err := Load(writeConfig(t, minimalNoBrokers+"  heartbeat_period: 5s\nlog: {progress_every: 0}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.HeartbeatPeriod != 5*time.Second || cfg.Log.ProgressEvery != 0 {
		t.Errorf("heartbeat_period %v, log.progress_every %v; want 5s and 0", cfg.Source.HeartbeatPeriod, cfg.Log.ProgressEvery)
	}
}

// TestEnvironmentOverridesSayTheyAreSo: a bad value or an unknown key an
// environment override brings is named with its variable (the file does
// not hold it).
func TestEnvironmentOverridesSayTheyAreSo(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"a value of the wrong type",
			minimalNoBrokers, []string{"READSIDE_SOURCE__SERVER_ID=abc"},
			[]string{"source.server_id: ", "(set by the environment: READSIDE_SOURCE__SERVER_ID)"}},
		{"an unknown key",
			minimalNoBrokers, []string{"READSIDE_SOURCE__TABELS=x"},
			[]string{"source has unknown keys: tabels", "(set by the environment: READSIDE_SOURCE__TABELS)"}},
		{"a bad mode value",
			minimalNoBrokers, []string{"READSIDE_SOURCE__SNAPSHOT__MODE=sometimes"},
			[]string{`source.snapshot.mode "sometimes": want initial or never (set by the environment: READSIDE_SOURCE__SNAPSHOT__MODE)`}},
	})
}
