// Package peers holds what `make bench-peers` runs Debezium with: the Maven
// poms that resolve Kafka Connect and the two Debezium plug-ins, and the
// published worker and connector configs (templates whose ${...} benchall
// fills in per run). docs/benchmarks.md documents them. The e2e test bed
// reads the three poms and the worker template from here too
// (e2e/testbed/connect.go, for TestDebeziumMatchesConnector and
// TestDebeziumJDBCSink), and TestDebeziumJDBCSink the JDBC sink's
// config: keep their paths.
package peers

import (
	_ "embed"
	"os"
)

// The artifacts.
var (
	//go:embed connect-pom.xml
	ConnectPom []byte
	//go:embed debezium-mariadb-pom.xml
	SourcePom []byte
	//go:embed debezium-jdbc-pom.xml
	SinkPom []byte
)

// The configs.
var (
	//go:embed worker.properties
	Worker string
	//go:embed mariadb-source.properties
	Source string
	//go:embed jdbc-sink.properties
	Sink string
)

// Render fills a template's ${NAME} placeholders from vars; a name vars
// lacks is kept as written so the worker rejects it loudly.
func Render(tmpl string, vars map[string]string) string {
	return os.Expand(tmpl, func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return "${" + k + "}"
	})
}
