package preflight

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/readside/readside/config"
)

func TestRegistry(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	down := srfake.New()
	downURL := down.URL()
	down.Close()
	cfg := func(format config.Format, url string) config.Config {
		c := config.Default()
		c.Kafka.Format = format
		c.Kafka.SchemaRegistry.URL = url
		return c
	}
	input := func(url string) config.Config {
		c := config.Default()
		c.Input.Kind, c.Input.TopicPrefix, c.Input.Format = config.InputDebezium, "dbserver1", config.InputAvro
		c.Input.SchemaRegistry.URL = url
		return c
	}
	cases := []struct {
		why  string
		cfg  config.Config
		want string // "" for no finding
	}{
		{"no registry without debezium-avro", cfg(config.FormatDebezium, ""), ""},
		{"a registry that answers, with the rule new schemas meet", cfg(config.FormatDebeziumAvro, reg.URL()), "ok: schema registry " + reg.URL() + " answers; its global compatibility is BACKWARD"},
		{"a registry that does not answer, with the fix", cfg(config.FormatDebeziumAvro, downURL), "error: schema registry " + downURL + " does not answer"},
		{"a connector's registry (input.format: avro) is checked too", input(reg.URL()), "ok: schema registry " + reg.URL() + " answers"},
		{"a connector's registry that does not answer, with the fix", input(downURL), "error: schema registry " + downURL + " does not answer"},
	}
	for _, c := range cases {
		got := Registry(t.Context(), c.cfg)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %v", c.why, got)
		case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0].Severity+": "+got[0].What, c.want)):
			t.Errorf("%s: %+v, want %q", c.why, got, c.want)
		}
	}
}
