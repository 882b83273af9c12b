package projections

import "testing"

// TestLinkMismatch: the link types an aggregate's join accepts for a
// parent key are those whose every value the key's type stores as itself
// and compares as the source compares the two columns, and any integer
// link to an integer key (TestKeptLinkType); a copy's or a
// children join takes any two numbers or times, and text of the key's
// collation.
func TestLinkMismatch(t *testing.T) {
	for _, c := range []struct {
		link, key string
		ok        bool
	}{
		{"int(11)", "int(11)", true},
		{"int", "int(11)", true}, // MySQL 8 shows no display width
		{"smallint(5) unsigned", "int(11)", true},
		{"int(10) unsigned", "bigint(20)", true},
		{"int(10) unsigned", "int(11)", true}, // kept in a type holding both (TestKeptLinkType)
		{"int(11)", "int(10) unsigned", true},
		{"bigint(20)", "int(11)", true},
		{"tinyint(3) unsigned", "tinyint(3) unsigned", true},
		{"decimal(6,2)", "int(11)", false},
		{"varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "int(11)", false},
		{"int(11)", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
		{"varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", false},
		{"varchar(5) CHARACTER SET latin1 COLLATE latin1_swedish_ci", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(5) CHARACTER SET latin1 COLLATE latin1_swedish_ci", false},
		{"char(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin", "char(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin", false},
		{"decimal(8,2)", "decimal(10,2)", true},
		{"decimal(10,3)", "decimal(10,2)", false},
		{"decimal(12,2)", "decimal(10,2)", false},
		{"varbinary(8)", "varbinary(16)", true},
		{"binary(8)", "binary(16)", false},
		{"datetime(6)", "datetime", false},
		{"date", "date", true},
		{"char(36) CHARACTER SET ascii COLLATE ascii_general_ci", "char(36) CHARACTER SET ascii COLLATE ascii_general_ci", true},
	} {
		why := linkMismatch(c.link, c.key, linkKept)
		if (why == "") != c.ok {
			t.Errorf("link %s, key %s: accepted %v (%q), want %v", c.link, c.key, why == "", why, c.ok)
		}
	}
	for _, c := range []struct {
		link, key string
		ok        bool
	}{
		{"decimal(6,2)", "int(11)", true},
		{"bigint(20)", "int(11)", true},
		{"datetime(6)", "datetime", true},
		{"varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "int(11)", false},
		{"int(11)", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
		{"varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
		{"varchar(5) CHARACTER SET latin1 COLLATE latin1_swedish_ci", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", true},
		{"date", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", false},
	} {
		why := linkMismatch(c.link, c.key, linkMatched)
		if (why == "") != c.ok {
			t.Errorf("copy's or children join: link %s, key %s: accepted %v (%q), want %v", c.link, c.key, why == "", why, c.ok)
		}
	}
	if why := linkMismatch("varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", linkCompared); why != "" {
		t.Errorf("a children entry's on compares in the sink: another collation refused (%q)", why)
	}
	if why := linkMismatch("varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "int(11)", linkCompared); why == "" {
		t.Error("a children entry's on: text against a number accepted")
	}
}

// TestKeptLinkType: an aggregate keeps an integer link in a type that
// holds every value of the link and of the key, the key's own when it
// can; other links in the key's type.
func TestKeptLinkType(t *testing.T) {
	for _, c := range []struct{ link, key, want string }{
		{"int(11)", "int(11)", "int(11)"},
		{"smallint(5) unsigned", "int(11)", "int(11)"},
		{"bigint(20)", "int(11)", "bigint(20)"},
		{"int(11)", "smallint(5) unsigned", "int(11)"},
		{"int(10) unsigned", "int(11)", "bigint(20)"},
		{"int(11)", "int(10) unsigned", "bigint(20)"},
		{"bigint(20)", "int(10) unsigned", "bigint(20)"},
		{"bigint(20) unsigned", "bigint(20)", "decimal(20,0)"},
		{"tinyint(4)", "bigint(20) unsigned", "decimal(20,0)"},
		{"varchar(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"decimal(8,2)", "decimal(10,2)", "decimal(10,2)"},
	} {
		if got := keptLinkType(c.link, c.key); got != c.want {
			t.Errorf("link %s, key %s: kept as %s, want %s", c.link, c.key, got, c.want)
		}
	}
}
