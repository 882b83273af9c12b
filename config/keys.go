package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// TableKeys is source.keys: per captured table ("db.table"), the columns
// that key its events when it has no primary key.
type TableKeys map[string][]string

// KeyOf is the configured key columns of db.table, nil when the table is
// keyed by its primary key.
func (s Source) KeyOf(db, table string) []string { return s.Keys[db+"."+table] }

// tableKeysHook decodes source.keys. The config's key delimiter is a dot,
// so koanf hands `{legacy.audit_log: [a, b]}` over as
// {legacy: {audit_log: [a, b]}}; the hook joins the two levels back into
// "db.table" (the nested spelling is accepted alike).
func tableKeysHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(TableKeys{}) {
		return data, nil
	}
	m, ok := data.(map[string]any)
	if !ok {
		return data, nil
	}
	out := map[string]any{}
	for db, v := range m {
		if tables, ok := v.(map[string]any); ok {
			for t, cols := range tables {
				out[db+"."+t] = cols
			}
			continue
		}
		out[db] = v // "db" alone: Validate names the entry
	}
	return out, nil
}

// validateKeys checks source.keys against source.tables and
// source.exclude_columns.
func (s Source) validateKeys() []error {
	var errs []error
	tables := make([]string, 0, len(s.Keys))
	for t := range s.Keys {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		cols := s.Keys[t]
		key := "source.keys." + t
		if _, _, ok := SplitTable(t); !ok {
			errs = append(errs, fmt.Errorf("%s: want db.table, e.g. source.keys: {legacy.audit_log: [request_id, seq]}", key))
			continue
		}
		if !slices.Contains(s.Tables, t) {
			errs = append(errs, fmt.Errorf("%s: %s is not in source.tables: add it there, or remove the entry", key, t))
		}
		if len(cols) == 0 {
			errs = append(errs, fmt.Errorf("%s is empty: list the columns of a UNIQUE NOT NULL index of %s, or remove the entry to key the table by its primary key", key, t))
		}
		seen := map[string]bool{}
		for _, c := range cols {
			switch {
			case strings.TrimSpace(c) == "":
				errs = append(errs, fmt.Errorf("%s has an empty column name: name each key column", key))
			case seen[strings.ToLower(c)]:
				errs = append(errs, fmt.Errorf("%s lists column %s twice: list each key column once", key, c))
			case slices.Contains(s.ExcludeColumns, t+"."+c):
				errs = append(errs, fmt.Errorf("%s: column %s is also in source.exclude_columns: a key column is published with every event; remove it from one of the two", key, c))
			}
			seen[strings.ToLower(c)] = true
		}
	}
	return errs
}
