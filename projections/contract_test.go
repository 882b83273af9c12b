package projections

import (
	"testing"

	"github.com/readside/readside/event"
)

// TestGroupPerDeployment: the consumer group deals a projection's
// partitions out among one deployment's projectors, so two configs that
// differ only in kafka.topic_prefix (two deployments on one broker) get
// two groups, and one config always the same. The default prefix keeps
// readside-projection-<name>.
func TestGroupPerDeployment(t *testing.T) {
	group := func(prefix string) (string, string) {
		cfg := baseConfig()
		if prefix != "" {
			cfg.Kafka.TopicPrefix = prefix
		}
		ps, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ps[0].Group, ps[0].DLQTopic
	}
	if g, dlq := group(""); g != "readside-projection-messages_by_sender" || dlq != "readside._readside_dlq.messages_by_sender" {
		t.Errorf("default prefix: group %q, dead-letter topic %q", g, dlq)
	}
	a, _ := group("shop-eu")
	again, _ := group("shop-eu")
	b, _ := group("shop-us")
	if a != again {
		t.Errorf("one config, two groups: %q and %q", a, again)
	}
	if a == b {
		t.Errorf("prefixes shop-eu and shop-us share the group %q", a)
	}
	if want := event.Group("shop-eu", "messages_by_sender"); a != want {
		t.Errorf("group %q, want %q", a, want)
	}
}

// TestRenamedProjectionHasItsOwnGroup: a backfill (and a rebuild's shadow,
// through WithName) consumes beside the live projector; in the live
// projector's group each would be dealt only part of the partitions and
// never reach the end offsets it waits for.
func TestRenamedProjectionHasItsOwnGroup(t *testing.T) {
	cfg := baseConfig()
	cfg.Kafka.TopicPrefix = "shop-eu"
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live := ps[0]
	for _, c := range []struct {
		why string
		p   *Projection
	}{
		{"a backfill consumes as its own projection", live.Backfill()},
		{"a rebuild's shadow consumes as its own projection", live.WithName(live.Name + "__rebuild")},
	} {
		if c.p.Group == live.Group {
			t.Errorf("%s: it shares the live group %q", c.why, live.Group)
		}
		if want := event.Group("shop-eu", c.p.Name); c.p.Group != want {
			t.Errorf("%s: group %q, want %q", c.why, c.p.Group, want)
		}
		if want := event.DLQTopic("shop-eu", c.p.Name); c.p.DLQTopic != want {
			t.Errorf("%s: dead-letter topic %q, want %q", c.why, c.p.DLQTopic, want)
		}
	}
	if live.Name != "messages_by_sender" || live.Group != event.Group("shop-eu", "messages_by_sender") {
		t.Errorf("renaming changed the live projection: %q in %q", live.Name, live.Group)
	}
}
