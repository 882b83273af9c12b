package peers

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRenderKeepsUnknownPlaceholders(t *testing.T) {
	got := Render("a=${A}\nb=${B}\n", map[string]string{"A": "1"})
	if got != "a=1\nb=${B}\n" {
		t.Fatalf("Render = %q", got)
	}
}

// The templates use only the names benchall fills in (dbz.vars and the
// worker's own), so a rendered config never reaches the worker with a
// literal ${...} in it.
func TestTemplatesUseKnownPlaceholders(t *testing.T) {
	known := []string{"NAME", "PREFIX", "BOOTSTRAP", "DB_PORT", "DB_USER", "DB_PASSWORD", "SERVER_ID", "SRC_DB", "TABLE",
		"SINK_DB", "TOPIC", "SINK_TABLE", "REST_PORT", "PLUGIN_PATH", "OFFSETS_FILE"}
	re := regexp.MustCompile(`\$\{([A-Z_]+)\}`)
	for name, tmpl := range map[string]string{"worker": Worker, "source": Source, "sink": Sink} {
		for _, m := range re.FindAllStringSubmatch(tmpl, -1) {
			if !slices.Contains(known, m[1]) {
				t.Errorf("%s.properties uses ${%s}, which benchall does not fill in", name, m[1])
			}
		}
		if !strings.Contains(tmpl, "${") {
			t.Errorf("%s.properties has no placeholders: not the template benchall expects", name)
		}
	}
}
