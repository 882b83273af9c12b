package sinks

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	driver "github.com/go-sql-driver/mysql"
)

func TestSchemaRejection(t *testing.T) {
	cases := []struct {
		why  string
		err  error
		want bool
	}{
		{"a longer VARCHAR or a larger TEXT value than the read column holds", &driver.MySQLError{Number: 1406}, true},
		{"a BIGINT value in an INT read column", &driver.MySQLError{Number: 1264}, true},
		{"a new ENUM or SET member", &driver.MySQLError{Number: 1265}, true},
		{"a character a latin1 read column cannot hold", &driver.MySQLError{Number: 1366}, true},
		{"a value of a changed type (text in a DATETIME read column)", &driver.MySQLError{Number: 1292}, true},
		{"a NULL from a source column made nullable", &driver.MySQLError{Number: 1048}, true},
		{"found through the wrapping of the apply path", fmt.Errorf("shard -: applying: %w", &driver.MySQLError{Number: 1406}), true},
		{"a duplicate on another unique key is no type's doing", &driver.MySQLError{Number: 1062}, false},
		{"a CHECK constraint is the sink's rule, not the source's type", &driver.MySQLError{Number: 4025}, false},
		{"an unknown column is the declaration's change, for plan --apply", &driver.MySQLError{Number: 1054}, false},
		{"a lost connection is a failure to reach the sink", errors.New("invalid connection"), false},
	}
	for _, c := range cases {
		if got := SchemaRejection(c.err); got != c.want {
			t.Errorf("%s: SchemaRejection(%v) = %v, want %v", c.why, c.err, got, c.want)
		}
	}
}

func TestFollows(t *testing.T) {
	widen := Drift{Column: "name", Planned: "varchar(200)", Existing: "varchar(16)", Safe: true, Alter: "MODIFY name"}
	narrow := Drift{Column: "name", Planned: "varchar(8)", Existing: "varchar(16)", Alter: "MODIFY name"}
	added := Drift{Column: "note", Planned: "varchar(10)", Safe: true, Alter: "ADD note"}
	removed := Drift{Column: "conv", Existing: "bigint", Safe: true, Alter: "MODIFY conv NULL"}
	unplanned := Drift{Column: "old", Existing: "bigint NULL", Harmless: true, Alter: "DROP old"}
	cases := []struct {
		why          string
		in           []Drift
		run, refused []string
	}{
		{"a widened source column is followed", []Drift{widen}, []string{"MODIFY name"}, nil},
		{"a narrowing could lose values: refused, never run", []Drift{narrow}, nil, []string{"MODIFY name"}},
		{"a column added to the declaration is the user's change, for plan --apply (and its backfill)", []Drift{added}, nil, nil},
		{"a column removed from the declaration is the user's change too", []Drift{removed, unplanned}, nil, nil},
		{"each drift on its own merits", []Drift{narrow, widen, added}, []string{"MODIFY name"}, []string{"MODIFY name"}},
	}
	alters := func(ds []Drift) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Alter)
		}
		return out
	}
	for _, c := range cases {
		run, refused := Follows(c.in)
		if !slices.Equal(alters(run), c.run) || !slices.Equal(alters(refused), c.refused) {
			t.Errorf("%s: run %q refused %q, want %q and %q", c.why, alters(run), alters(refused), c.run, c.refused)
		}
	}
}
