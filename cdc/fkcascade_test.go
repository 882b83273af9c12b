package cdc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// TestCascadeFindings: every foreign key whose rule InnoDB applies to the
// child without a binlog event is one warning naming the constraint, both
// tables and columns, the parent action, the projections that read the
// child and both fixes; RESTRICT and NO ACTION change nothing in the child.
func TestCascadeFindings(t *testing.T) {
	projections := map[string]config.Projection{
		"pets_copy":   {From: "shop.pets"},
		"owner_pets":  {From: "shop.owners", Children: map[string]config.Children{"pets": {From: "shop.pets"}}},
		"visits_pets": {From: "shop.visits", Join: []config.Join{{From: "shop.pets"}}},
		"owners_copy": {From: "shop.owners"},
	}
	fk := func(del, upd string) foreignKey {
		return foreignKey{Name: "pets_owner_fk", Child: "shop.pets", Parent: "shop.owners", Columns: []string{"owner_id", "owner_site"}, RefColumns: []string{"id", "site"}, DeleteRule: del, UpdateRule: upd}
	}
	for _, c := range []struct {
		why     string
		fk      foreignKey
		sev     string
		want    []string
		wantNot []string
	}{
		{"SET NULL on delete: the child's columns go NULL without an event", fk("SET NULL", "RESTRICT"), "warning",
			[]string{"pets_owner_fk", "shop.pets (owner_id, owner_site)", "shop.owners (id, site)", "ON DELETE SET NULL: deleting a row of shop.owners sets shop.pets.owner_id, shop.pets.owner_site to NULL", "without writing them to the binlog"}, []string{"ON UPDATE"}},
		{"CASCADE on delete: the child's rows vanish without an event", fk("CASCADE", "NO ACTION"), "warning",
			[]string{"ON DELETE CASCADE: deleting a row of shop.owners deletes the rows of shop.pets"}, []string{"ON UPDATE"}},
		{"CASCADE on update: the child's key columns follow the parent's without an event", fk("RESTRICT", "CASCADE"), "warning",
			[]string{"ON UPDATE CASCADE: changing shop.owners.id, shop.owners.site of a row of shop.owners sets shop.pets.owner_id, shop.pets.owner_site", "to the new value"}, []string{"ON DELETE"}},
		{"SET DEFAULT (parsed, where an engine supports it) is a cascade too", fk("SET DEFAULT", "SET NULL"), "warning",
			[]string{"ON DELETE SET DEFAULT", "to their defaults", "ON UPDATE SET NULL"}, nil},
		{"RESTRICT and NO ACTION change nothing in the child: no warning", fk("RESTRICT", "NO ACTION"), "ok",
			[]string{"no foreign key of a captured table cascades"}, []string{"pets_owner_fk"}},
	} {
		got := cascadeFindings([]foreignKey{c.fk}, projections)
		if len(got) != 1 || got[0].Severity != c.sev {
			t.Errorf("%s: findings %+v, want one %s", c.why, got, c.sev)
			continue
		}
		text := got[0].What + "\nfix: " + got[0].Fix
		if c.sev == "warning" {
			c.want = append(c.want, "the read tables of projection(s) owner_pets, pets_copy, visits_pets keep them too",
				"readside verify --projection owner_pets --repair", "readside verify --projection pets_copy --repair", "do the cascade in SQL", "from cron with the daemon running")
			c.wantNot = append(c.wantNot, "owners_copy")
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: finding lacks %q:\n%s", c.why, w, text)
			}
		}
		for _, w := range c.wantNot {
			if strings.Contains(text, w) {
				t.Errorf("%s: finding has %q:\n%s", c.why, w, text)
			}
		}
	}

	// A cascading child no projection reads still loses rows in its topic.
	got := cascadeFindings([]foreignKey{fk("CASCADE", "CASCADE")}, nil)
	if len(got) != 1 || !strings.Contains(got[0].What, "no projection reads it") || !strings.Contains(got[0].Fix, "readside snapshot --table shop.pets") || strings.Contains(got[0].Fix, "verify") {
		t.Errorf("unread child: %+v", got)
	}
}

// TestForeignKeyRules reads the rules from SHOW CREATE TABLE as MariaDB
// 10.11 printed it for a table with hostile names (recorded on the test bed).
func TestForeignKeyRules(t *testing.T) {
	create := "CREATE TABLE `pe``ts` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `owner_id` int(11) DEFAULT NULL,\n" +
		"  `o)b` int(11) DEFAULT NULL,\n" +
		"  `o2` int(11) DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `pets ON DELETE CASCADE` (`owner_id`,`o)b`),\n" +
		"  KEY `o2` (`o2`),\n" +
		"  CONSTRAINT `pe``ts_ibfk_1` FOREIGN KEY (`o2`) REFERENCES `scr_19423_2`.`o2` (`id`) ON UPDATE SET NULL,\n" +
		"  CONSTRAINT `pe``ts_ibfk_2` FOREIGN KEY (`o2`) REFERENCES `scr_19423_2`.`o2` (`id`) ON DELETE NO ACTION,\n" +
		"  CONSTRAINT `pets ON DELETE CASCADE` FOREIGN KEY (`owner_id`, `o)b`) REFERENCES `owners` (`id`, `b`) ON DELETE SET NULL ON UPDATE CASCADE\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
	// A column whose name reads like a rule (written by hand, in the
	// server's format).
	create += "\n  CONSTRAINT `c3` FOREIGN KEY (`x`) REFERENCES `p` (`ON DELETE CASCADE`) ON UPDATE NO ACTION"
	ansi := "CREATE TABLE \"t\" (\n  CONSTRAINT \"a\"\"b\" FOREIGN KEY (\"x\") REFERENCES \"p\" (\"id\") ON DELETE CASCADE\n)"
	got := foreignKeyRules(create)
	for k, v := range foreignKeyRules(ansi) {
		got[k] = v
	}
	want := map[string][2]string{
		"pe`ts_ibfk_1":           {"RESTRICT", "SET NULL"},  // ON DELETE left out: the default
		"pe`ts_ibfk_2":           {"NO ACTION", "RESTRICT"}, // ON UPDATE left out
		"pets ON DELETE CASCADE": {"SET NULL", "CASCADE"},   // a name that reads like a rule is not one
		"a\"b":                   {"CASCADE", "RESTRICT"},   // ANSI_QUOTES
		"c3":                     {"RESTRICT", "NO ACTION"}, // a quoted column named like a rule is not one
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rules %v, want %v", got, want)
	}
}
