package cdc

// Foreign-key cascades for `readside check`. InnoDB applies ON DELETE /
// ON UPDATE CASCADE, SET NULL and SET DEFAULT inside the storage engine,
// below the layer that writes row events: the binlog holds the parent's
// change and nothing of the child's (MariaDB 10.11 and MySQL up to 8.4; a
// Table_map for the child, then only the parent's rows). A captured child
// table therefore changes on the source without an event, and its topic
// and read tables keep the old rows. Only verify finds that, so check
// names every such constraint on a captured child table.
//
// It is a warning, not an error: everything that is in the binlog is
// still read exactly, the loss is confined to the rows a cascade touches,
// `verify --repair` restores them, and many such constraints never fire
// (the application deletes the children first). An error would fail
// every check of such a schema with no way to acknowledge it short of
// altering the source.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/readside/readside/config"
)

// cascadingRules are the referential actions InnoDB carries out on the
// child table without a row event of its own. RESTRICT and NO ACTION
// change nothing in the child.
var cascadingRules = map[string]bool{"CASCADE": true, "SET NULL": true, "SET DEFAULT": true}

// foreignKey is one constraint of information_schema, its columns in
// ordinal order.
type foreignKey struct {
	Name                   string
	Child, Parent          string // db.table
	Columns, RefColumns    []string
	DeleteRule, UpdateRule string
}

// foreignKeysQuery reads the columns of the foreign keys whose child
// table is in one of the given schemas (the placeholders are appended
// per schema). The rules are not read from REFERENTIAL_CONSTRAINTS:
// MariaDB 10.11 shows its rows only to users with more than SELECT on the
// table (empty for the tailer's user with SELECT on *.*, seen on the test
// bed), while KEY_COLUMN_USAGE and SHOW CREATE TABLE need only SELECT.
const foreignKeysQuery = `SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME,
 REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
 FROM information_schema.KEY_COLUMN_USAGE
 WHERE REFERENCED_TABLE_NAME IS NOT NULL AND TABLE_SCHEMA IN (%s)
 ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`

// foreignKeys reads every foreign key whose child is one of tables, its
// rules from the child's SHOW CREATE TABLE.
func (s *sourceDB) foreignKeys(ctx context.Context, tables []string) ([]foreignKey, error) {
	captured := map[string]bool{}
	var schemas []any
	for _, t := range tables {
		captured[t] = true
		if db, _, ok := config.SplitTable(t); ok && !slices.Contains(schemas, any(db)) {
			schemas = append(schemas, db)
		}
	}
	if len(schemas) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(schemas)), ", ")
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(foreignKeysQuery, marks), schemas...)
	if err != nil {
		return nil, fmt.Errorf("reading foreign keys from information_schema.KEY_COLUMN_USAGE: %w", err)
	}
	defer rows.Close()
	var out []foreignKey
	for rows.Next() {
		var db, tbl, name, col, rdb, rtbl, rcol string
		if err := rows.Scan(&db, &tbl, &name, &col, &rdb, &rtbl, &rcol); err != nil {
			return nil, fmt.Errorf("reading foreign keys from information_schema.KEY_COLUMN_USAGE: %w", err)
		}
		child := db + "." + tbl
		if !captured[child] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Child == child && out[n-1].Name == name {
			out[n-1].Columns = append(out[n-1].Columns, col)
			out[n-1].RefColumns = append(out[n-1].RefColumns, rcol)
			continue
		}
		out = append(out, foreignKey{Name: name, Child: child, Parent: rdb + "." + rtbl, Columns: []string{col}, RefColumns: []string{rcol}})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rules := map[string]map[string][2]string{} // child -> constraint -> delete, update
	for i, fk := range out {
		if _, ok := rules[fk.Child]; !ok {
			db, tbl, _ := config.SplitTable(fk.Child)
			var name, create string
			if err := s.db.QueryRowContext(ctx, "SHOW CREATE TABLE "+quoteIdent(db)+"."+quoteIdent(tbl)).Scan(&name, &create); err != nil {
				return nil, fmt.Errorf("reading the foreign keys of %s (SHOW CREATE TABLE): %w", fk.Child, err)
			}
			rules[fk.Child] = foreignKeyRules(create)
		}
		r, ok := rules[fk.Child][fk.Name]
		if !ok {
			return nil, fmt.Errorf("foreign key %s of %s is in information_schema.KEY_COLUMN_USAGE but not in its SHOW CREATE TABLE", fk.Name, fk.Child)
		}
		out[i].DeleteRule, out[i].UpdateRule = r[0], r[1]
	}
	return out, nil
}

var (
	quotedIdent  = regexp.MustCompile("`(?:[^`]|``)*`|\"(?:[^\"]|\"\")*\"")
	constraintFK = regexp.MustCompile(`^CONSTRAINT (\x00\d+) FOREIGN KEY `)
	fkRule       = regexp.MustCompile(`ON (DELETE|UPDATE) (CASCADE|SET NULL|SET DEFAULT|RESTRICT|NO ACTION)`)
)

// foreignKeyRules reads the ON DELETE and ON UPDATE rules of every
// foreign key in a SHOW CREATE TABLE text, by constraint name; a rule
// the text omits is RESTRICT, the default the server leaves out.
// Quoted identifiers (backquotes, or double quotes under ANSI_QUOTES) are
// set aside first, so a name that reads like a rule is never taken for one.
func foreignKeyRules(create string) map[string][2]string {
	out := map[string][2]string{}
	for _, line := range strings.Split(create, "\n") {
		var names []string
		bare := quotedIdent.ReplaceAllStringFunc(strings.TrimSpace(line), func(q string) string {
			names = append(names, strings.ReplaceAll(q[1:len(q)-1], q[:1]+q[:1], q[:1]))
			return fmt.Sprintf("\x00%d", len(names)-1)
		})
		m := constraintFK.FindStringSubmatch(bare)
		if m == nil {
			continue
		}
		var i int
		fmt.Sscanf(m[1][1:], "%d", &i)
		r := [2]string{"RESTRICT", "RESTRICT"}
		for _, rm := range fkRule.FindAllStringSubmatch(bare, -1) {
			r[map[string]int{"DELETE": 0, "UPDATE": 1}[rm[1]]] = rm[2]
		}
		out[names[i]] = r
	}
	return out
}

// checkCascades names every foreign key of a captured table whose rule
// changes the table without a binlog event.
func (s *sourceDB) checkCascades(ctx context.Context, cfg config.Config) []Finding {
	fks, err := s.foreignKeys(ctx, cfg.Source.Tables)
	if err != nil {
		return []Finding{{Severity: "warning", What: fmt.Sprintf("%v: foreign keys whose cascades bypass the binlog cannot be listed", err),
			Fix: "grant the source user SELECT on the captured tables (information_schema shows only what it may read)"}}
	}
	return cascadeFindings(fks, cfg.Projections)
}

// cascadeFindings is one warning per cascading foreign key, naming what
// changes without an event, the projections that read the child table and
// the fixes; or one ok when there is none.
func cascadeFindings(fks []foreignKey, projections map[string]config.Projection) []Finding {
	var out []Finding
	for _, fk := range fks {
		var effects []string
		if r := strings.ToUpper(fk.DeleteRule); cascadingRules[r] {
			effects = append(effects, fmt.Sprintf("ON DELETE %s: deleting a row of %s %s", r, fk.Parent, childEffect(r, fk, "delete")))
		}
		if r := strings.ToUpper(fk.UpdateRule); cascadingRules[r] {
			effects = append(effects, fmt.Sprintf("ON UPDATE %s: changing %s of a row of %s %s", r, colList(fk.Parent, fk.RefColumns), fk.Parent, childEffect(r, fk, "update")))
		}
		if len(effects) == 0 {
			continue
		}
		readers := readersOf(fk.Child, projections)
		read := "no projection reads it (the topic's consumers see the same gap)"
		if len(readers) > 0 {
			read = "the read tables of projection(s) " + strings.Join(readers, ", ") + " keep them too"
		}
		what := fmt.Sprintf("foreign key %s of captured table %s (%s) references %s (%s): %s. InnoDB makes these changes without writing them to the binlog "+
			"(MariaDB; MySQL up to 8.4), so readside never sees them: the topic of %s keeps the values the source changed and %s; only `readside verify` finds them",
			fk.Name, fk.Child, strings.Join(fk.Columns, ", "), fk.Parent, strings.Join(fk.RefColumns, ", "), strings.Join(effects, "; "), fk.Child, read)
		// With no projection to verify, the topic can only be re-published
		// (rows a cascade deleted stay in it).
		repair := fmt.Sprintf("or re-publish the table on a schedule: readside snapshot --table %s (rows a cascade deleted stay in the topic)", fk.Child)
		if len(readers) > 0 {
			repair = "or repair on a schedule, from cron with the daemon running: " + repairCommands(readers) + " (the daemon's verify.every finds the drift and reports it, it does not repair)"
		}
		fix := fmt.Sprintf("make the application do the cascade in SQL, in the parent's transaction (UPDATE/DELETE the rows of %s before changing %s), so it is binlogged, and make the rule RESTRICT or NO ACTION; %s; docs/operations.md, \"Foreign-key cascades\"",
			fk.Child, fk.Parent, repair)
		out = append(out, Finding{Severity: "warning", What: what, Fix: fix})
	}
	if len(out) == 0 {
		out = append(out, Finding{Severity: "ok", What: "no foreign key of a captured table cascades (ON DELETE/UPDATE CASCADE, SET NULL, SET DEFAULT), which InnoDB would apply without a binlog event"})
	}
	return out
}

// childEffect says what a rule does to the child's rows.
func childEffect(rule string, fk foreignKey, on string) string {
	cols := colList(fk.Child, fk.Columns)
	switch {
	case rule == "CASCADE" && on == "delete":
		return "deletes the rows of " + fk.Child + " that reference it"
	case rule == "CASCADE":
		return "sets " + cols + " of the rows of " + fk.Child + " that reference it to the new value"
	case rule == "SET NULL":
		return "sets " + cols + " to NULL in the rows of " + fk.Child + " that reference it"
	default:
		return "sets " + cols + " to their defaults in the rows of " + fk.Child + " that reference it"
	}
}

func colList(table string, cols []string) string {
	var out []string
	for _, c := range cols {
		out = append(out, table+"."+c)
	}
	return strings.Join(out, ", ")
}

// repairCommands are the verify --repair commands of projections, for a
// fix that names them.
func repairCommands(projections []string) string {
	cmds := make([]string, len(projections))
	for i, p := range projections {
		cmds[i] = "readside verify --projection " + p + " --repair"
	}
	return strings.Join(cmds, "; ")
}

// readersOf names the projections that read table: as their source, a
// join or a children array.
func readersOf(table string, projections map[string]config.Projection) []string {
	var out []string
	for name, p := range projections {
		reads := p.From == table
		for _, j := range p.Join {
			reads = reads || j.From == table
		}
		for _, c := range p.Children {
			reads = reads || c.From == table
		}
		if reads {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
