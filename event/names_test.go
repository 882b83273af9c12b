package event

import "testing"

// TestNames: the names a deployment's data lives under. Each is where an
// existing deployment's topics and groups are, so a change moves them.
func TestNames(t *testing.T) {
	cases := []struct{ why, got, want string }{
		{"the checkpoint topic", CheckpointTopic("readside"), "readside._readside_checkpoints"},
		{"the schema history topic", SchemaHistoryTopic("prod.cdc"), "prod.cdc._readside_schema_history"},
		{"a plain projection's dead-letter topic", DLQTopic("readside", "orders_by_customer"), "readside._readside_dlq.orders_by_customer"},
		{"any other projection name is escaped like a table name", DLQTopic("readside", "orders by customer"), "readside..__readside__dlq.orders_20by_20customer"},
		{"the default prefix keeps readside-projection-<name>", Group("readside", "orders_by_customer"), "readside-projection-orders_by_customer"},
		{"another prefix names its own group", Group("shop-eu", "orders_by_customer"), "shop-eu-projection-orders_by_customer"},
		{"a group id takes any projection name as it is", Group("readside", "orders by customer"), "readside-projection-orders by customer"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.why, c.got, c.want)
		}
	}
}

// TestGroupPerDeployment: one projection name under two prefixes (two
// deployments on one broker) gets two groups, including prefixes that
// differ only in characters Kafka treats alike in topic names.
func TestGroupPerDeployment(t *testing.T) {
	prefixes := []string{"readside", "readside2", "prod.cdc", "prod_cdc", "a", "a-projection"}
	seen := map[string]string{}
	for _, p := range prefixes {
		g := Group(p, "orders")
		if prev, ok := seen[g]; ok {
			t.Errorf("prefixes %q and %q share the group %q", prev, p, g)
		}
		seen[g] = p
		if again := Group(p, "orders"); again != g {
			t.Errorf("Group(%q, orders) = %q, then %q", p, g, again)
		}
	}
}
