package sinks

import (
	"testing"

	"github.com/readside/readside/projections"
)

func TestColumnName(t *testing.T) {
	for ref, want := range map[string]string{
		"s1.`k_id`":     "k_id",
		"`g_region`":    "g_region",
		"r.`a.b`":       "a.b",
		"`we``ird`":     "we`ird",
		"r.`x``.y`":     "x`.y",
		"plain":         "plain",
		"s.plain":       "plain",
		"`_rs_version`": "_rs_version",
	} {
		if got := columnName(ref); got != want {
			t.Errorf("columnName(%s) = %q, want %q", ref, got, want)
		}
	}
}

// TestKeyInCharsets: a key match converts the parameters of text columns
// in another character set, and falls back to equalities joined by OR
// when a column name is ambiguous (the server converts those).
func TestKeyInCharsets(t *testing.T) {
	p := &projections.Projection{Name: "kc", Table: "kc"}
	keyCharsets.Store(p, map[string]string{"g_region": "CONVERT(? USING latin1) COLLATE latin1_german2_ci", "g_code": "CONVERT(? USING utf16)", "k_x": ambiguousCharset})
	defer keyCharsets.Delete(p)
	m := keyIn(p, "DELETE FROM t WHERE ", []string{"`g_region`", "s.`g_code`", "`n`"}, "")
	if got, want := m.text(2), "DELETE FROM t WHERE (`g_region`, s.`g_code`, `n`) IN ((CONVERT(? USING latin1) COLLATE latin1_german2_ci, CONVERT(? USING utf16), ?), (CONVERT(? USING latin1) COLLATE latin1_german2_ci, CONVERT(? USING utf16), ?))"; got != want {
		t.Errorf("converted:\ngot  %s\nwant %s", got, want)
	}
	m = keyIn(p, "SELECT 1 FROM t WHERE a = 1 AND ", []string{"`k_x`", "`n`"}, " LIMIT 1")
	if got, want := m.text(2), "SELECT 1 FROM t WHERE a = 1 AND ((`k_x`, `n`) = (?, ?) OR (`k_x`, `n`) = (?, ?)) LIMIT 1"; got != want {
		t.Errorf("ambiguous:\ngot  %s\nwant %s", got, want)
	}
	keyCharsets.Store(p, map[string]string{"status": listScanned, "kind": "CONVERT(? USING latin1) COLLATE latin1_bin" + listScanned})
	m = keyIn(p, "DELETE FROM t WHERE ", []string{"`status`", "`kind`", "`id`"}, "")
	if got, want := m.text(2), "DELETE FROM t WHERE ((`status`, `kind`, `id`) = (?, CONVERT(? USING latin1) COLLATE latin1_bin, ?) OR (`status`, `kind`, `id`) = (?, CONVERT(? USING latin1) COLLATE latin1_bin, ?))"; got != want {
		t.Errorf("ENUM or SET columns (the server scans a list of rows over them):\ngot  %s\nwant %s", got, want)
	}
	m = keyIn(p, "DELETE FROM t WHERE ", []string{"`g_region`"}, "")
	if got, want := m.text(2), "DELETE FROM t WHERE `g_region` IN (?, ?)"; got != want {
		t.Errorf("one column (the server converts a one-column list):\ngot  %s\nwant %s", got, want)
	}
}
