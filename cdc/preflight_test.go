package cdc

import "testing"

func TestGrantsCover(t *testing.T) {
	lines := []string{
		"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `repl`@`%` IDENTIFIED BY PASSWORD '*X'",
		"GRANT SELECT ON `shop`.* TO `repl`@`%`",
		"GRANT SELECT (`id`, `body`) ON `chat`.`messages` TO `repl`@`%`",
		"GRANT SELECT ON `chat`.`rooms` TO `repl`@`%`",
		"GRANT INSERT, UPDATE, DELETE, CREATE ON `readside`.* TO `repl`@`%`",
		"GRANT ALL PRIVILEGES ON `app\\_%`.* TO `repl`@`%`",
		"GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `repl`@`%`",
	}
	var gs grants
	for _, l := range lines {
		if g, ok := parseGrant(l); ok {
			gs = append(gs, g)
		}
	}
	cases := []struct {
		why       string
		db, table string
		privs     []string
		want      bool
	}{
		{"global replication grant", "*", "*", []string{"REPLICATION SLAVE"}, true},
		{"MariaDB's BINLOG MONITOR stands for REPLICATION CLIENT", "*", "*", []string{"REPLICATION CLIENT", "BINLOG MONITOR"}, true},
		{"a database grant is not global", "*", "*", []string{"SELECT"}, false},
		{"a database grant covers its tables", "shop", "orders", []string{"SELECT"}, true},
		{"a column grant is not a table grant", "chat", "messages", []string{"SELECT"}, false},
		{"a table grant covers that table", "chat", "rooms", []string{"SELECT"}, true},
		{"a table grant does not cover the database", "chat", "", []string{"SELECT"}, false},
		{"signal database grants", "readside", "", []string{"CREATE"}, true},
		{"an escaped underscore is literal", "app_x", "t", []string{"SELECT"}, true},
		{"... and does not match another character", "appXx", "t", []string{"SELECT"}, false},
		{"routine grants are ignored", "shop", "p", []string{"EXECUTE"}, false},
	}
	for _, c := range cases {
		if got := gs.has(c.db, c.table, c.privs...); got != c.want {
			t.Errorf("%s: has(%s, %s, %v) = %v", c.why, c.db, c.table, c.privs, got)
		}
	}
	if g, ok := parseGrant("GRANT `app_reader`@`%` TO `repl`@`%`"); !ok || g.role == "" {
		t.Errorf("a granted role is not recognised: %+v", g)
	}
}
