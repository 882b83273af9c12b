package cdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/internal/sourcedb"
)

// dbRecord is the stored state of a tracked database.
type dbRecord struct {
	Charset string `json:"charset"`
}

// records are the history records of the given tracker keys: the table's
// (or database's) current state, or a tombstone when it is gone.
func (tr *schemaTracker) records(topic, txnID string, keys []string) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for _, k := range keys {
		r := &kgo.Record{Topic: topic, Key: []byte(txnID + "\x00" + k)}
		if db, ok := strings.CutSuffix(k, "\x00"); ok {
			b, err := json.Marshal(dbRecord{Charset: tr.dbCharset[db]})
			if err != nil {
				return nil, err
			}
			r.Value = b
		} else if def := tr.tables[k]; def != nil {
			b, err := json.Marshal(def)
			if err != nil {
				return nil, err
			}
			r.Value = b
		}
		out = append(out, r)
	}
	return out, nil
}

// produceSchemaHistory writes the history records of the given tracker
// keys into the open Kafka transaction: they commit with the checkpoint
// past the DDL they follow.
func (p *publisher) produceSchemaHistory(ctx context.Context, tr *schemaTracker, keys []string) error {
	recs, err := tr.records(p.historyTopic, p.txnID, keys)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := p.produce(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// allKeys lists every tracked database and table, for a snapshot.
func (tr *schemaTracker) allKeys() []string {
	var keys []string
	for db := range tr.dbs {
		keys = append(keys, db+"\x00")
	}
	for k := range tr.tables {
		keys = append(keys, k)
	}
	return keys
}

// loadSchemaHistory fills tr from this tailer's committed history records.
func (p *publisher) loadSchemaHistory(ctx context.Context, tr *schemaTracker) error {
	topic := p.historyTopic
	prefix := p.txnID + "\x00"
	var errs []error
	err := p.readCommitted(ctx, topic, func(r *kgo.Record) {
		k, ok := strings.CutPrefix(string(r.Key), prefix)
		if !ok {
			return
		}
		db, _, _ := strings.Cut(k, "\x00")
		if !tr.dbs[db] {
			return // no longer captured
		}
		if _, ok := strings.CutSuffix(k, "\x00"); ok {
			var rec dbRecord
			if r.Value != nil {
				if err := json.Unmarshal(r.Value, &rec); err != nil {
					errs = append(errs, fmt.Errorf("schema history record %q: %w", k, err))
				}
			}
			tr.dbCharset[db] = rec.Charset
			return
		}
		if r.Value == nil {
			delete(tr.tables, k)
			return
		}
		var def tableDef
		if err := json.Unmarshal(r.Value, &def); err != nil {
			errs = append(errs, fmt.Errorf("schema history record %q: %w", strings.ReplaceAll(k, "\x00", "."), err))
			return
		}
		tr.tables[k] = &def
	})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("corrupt schema history in %s: %v; re-snapshot it (docs/operations.md, \"schema history\")", topic, errs[0])
	}
	return nil
}

// snapshotSchema reads the tables of the tracked databases from
// information_schema into tr, and the facts DDL needs (charsets of
// collations, the server's and each database's default charset).
func (s *sourceDB) snapshotSchema(ctx context.Context, tr *schemaTracker) error {
	if err := s.schemaFacts(ctx, tr); err != nil {
		return err
	}
	tr.tables = map[string]*tableDef{}
	for db := range tr.dbs {
		var cs string
		err := s.db.QueryRowContext(ctx, "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db).Scan(&cs)
		if err == nil {
			tr.dbCharset[db] = cs
		}
		if err := s.snapshotTables(ctx, tr, db); err != nil {
			return err
		}
		if err := s.snapshotColumns(ctx, tr, db); err != nil {
			return err
		}
		if err := s.snapshotPrimaryKeys(ctx, tr, db); err != nil {
			return err
		}
	}
	return nil
}

// snapshotTables reads db's base tables and their default charsets.
func (s *sourceDB) snapshotTables(ctx context.Context, tr *schemaTracker, db string) error {
	rows, err := s.db.QueryContext(ctx, `SELECT t.TABLE_NAME, COALESCE(cl.CHARACTER_SET_NAME, '') FROM information_schema.TABLES t
		LEFT JOIN information_schema.COLLATIONS cl ON cl.COLLATION_NAME = t.TABLE_COLLATION
		WHERE t.TABLE_SCHEMA = ? AND t.TABLE_TYPE = 'BASE TABLE'`, db)
	if err != nil {
		return fmt.Errorf("reading tables of %s: %w", db, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, charset string
		if err := rows.Scan(&name, &charset); err != nil {
			return err
		}
		tr.tables[tableKey(db, name)] = &tableDef{Charset: charset}
	}
	return rows.Err()
}

// snapshotColumns reads the columns of db's tables, in order.
func (s *sourceDB) snapshotColumns(ctx context.Context, tr *schemaTracker, db string) error {
	cols, err := s.db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''),
		COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0), COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`, db)
	if err != nil {
		return fmt.Errorf("reading columns of %s: %w", db, err)
	}
	defer cols.Close()
	type masked struct {
		table string
		def   *tableDef
		i     int
	}
	var probe []masked
	for cols.Next() {
		var tname string
		var c colDef
		var colType string
		if err := cols.Scan(&tname, &c.Name, &c.Type, &colType, &c.Charset, &c.Prec, &c.Scale, &c.FSP, &c.Length); err != nil {
			return err
		}
		def := tr.tables[tableKey(db, tname)]
		if def == nil {
			continue // a view
		}
		// COLUMN_TYPE keeps its case: it holds ENUM and SET member names.
		c.Unsigned = strings.Contains(strings.ToLower(colType), "unsigned")
		switch c.Type {
		case "enum", "set":
			c.Members = sourcedb.ParseMembers(colType)
			if sourcedb.MembersMayBeMasked(c.Charset, c.Members) {
				probe = append(probe, masked{tname, def, len(def.Columns)})
			}
		}
		keepTypeAttributes(&c)
		def.Columns = append(def.Columns, c)
	}
	if err := cols.Err(); err != nil {
		return err
	}
	cols.Close()
	for _, m := range probe {
		c := &m.def.Columns[m.i]
		exact, err := s.exactMembers(ctx, db, m.table, c.Name, strings.ToUpper(c.Type), len(c.Members))
		if err != nil {
			return err
		}
		c.Members = exact
	}
	return nil
}

// keepTypeAttributes clears the attributes information_schema reports
// for a column whose type does not carry them (a length beside CHAR and
// BINARY, a precision beside DECIMAL and BIT, ...); a binary type's
// charset is "binary".
func keepTypeAttributes(c *colDef) {
	switch c.Type {
	case "char", "binary":
	default:
		c.Length = 0
	}
	switch c.Type {
	case "decimal", "numeric", "bit":
	default:
		c.Prec, c.Scale = 0, 0
	}
	switch c.Type {
	case "datetime", "timestamp", "time":
	default:
		c.FSP = 0
	}
	switch c.Type {
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		c.Charset = "binary"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
	default:
		c.Charset = ""
	}
}

// snapshotPrimaryKeys reads the primary key columns of db's tables.
func (s *sourceDB) snapshotPrimaryKeys(ctx context.Context, tr *schemaTracker, db string) error {
	pk, err := s.db.QueryContext(ctx, `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND INDEX_NAME = 'PRIMARY'`+sourcedb.NotRowEnd("STATISTICS")+` ORDER BY TABLE_NAME, SEQ_IN_INDEX`, db)
	if err != nil {
		return err
	}
	defer pk.Close()
	for pk.Next() {
		var tname, col string
		if err := pk.Scan(&tname, &col); err != nil {
			return err
		}
		if def := tr.tables[tableKey(db, tname)]; def != nil {
			def.PK = append(def.PK, col)
		}
	}
	return pk.Err()
}

// schemaFacts reads what following DDL needs from the server and is not
// part of the history: collation names and the server's default charset.
func (s *sourceDB) schemaFacts(ctx context.Context, tr *schemaTracker) error {
	rows, err := s.db.QueryContext(ctx, "SELECT COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME IS NOT NULL")
	if err != nil {
		return fmt.Errorf("reading collations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var coll, cs string
		if err := rows.Scan(&coll, &cs); err != nil {
			return err
		}
		tr.collations[strings.ToLower(coll)] = cs
	}
	if err := rows.Err(); err != nil {
		return err
	}
	tr.server, err = s.variable(ctx, "character_set_server")
	return err
}

// ddlBetween scans the binlog from one position to another (both on this
// server) for a statement that changes a tracked database, returning the
// first one. Used when the schema snapshot was taken at a later position
// than where the stream starts: it is only the schema at the start if no
// DDL lies in between.
func (s *sourceDB) ddlBetween(ctx context.Context, from, to Position, tr *schemaTracker) (string, error) {
	files, err := s.binlogFiles(ctx)
	if err != nil {
		return "", err
	}
	started := false
	for _, f := range files {
		if f == from.File {
			started = true
		}
		if !started {
			continue
		}
		if f > to.File {
			break
		}
		q := "SHOW BINLOG EVENTS IN '" + strings.ReplaceAll(f, "'", "''") + "'"
		if f == from.File {
			q += fmt.Sprintf(" FROM %d", from.Pos)
		}
		rows, err := s.db.QueryContext(ctx, q)
		if err != nil {
			return "", fmt.Errorf("scanning %s for DDL: %w", f, err)
		}
		for rows.Next() {
			vals, err := scanRaw(rows)
			if err != nil {
				rows.Close()
				return "", err
			}
			// Log_name, Pos, Event_type, Server_id, End_log_pos, Info
			if f == to.File && atoiRaw(vals[1]) >= int64(to.Pos) {
				break
			}
			if string(vals[2]) != "Query" {
				continue
			}
			info := string(vals[5])
			db := ""
			if rest, ok := strings.CutPrefix(info, "use "); ok {
				if i := strings.Index(rest, "; "); i >= 0 {
					toks := tokenize(rest[:i])
					if len(toks) > 0 {
						db = toks[0]
					}
					info = rest[i+2:]
				}
			}
			toks := tokenize(info)
			if len(toks) < 2 {
				continue
			}
			switch strings.ToLower(toks[0]) {
			case "create", "alter", "drop", "rename":
				if tr.mayTouch(db, toks) {
					rows.Close()
					return info, nil
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
		if f == to.File {
			break
		}
	}
	if !started {
		return "", fmt.Errorf("%w: file %s is gone", ErrPurged, from.File)
	}
	return "", nil
}

func atoiRaw(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// readCommitted reads a topic's partition 0 read-committed from the start
// to its current end, calling fn for each data record.
func (p *publisher) readCommitted(ctx context.Context, topic string, fn func(*kgo.Record)) error {
	ends, err := p.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("listing end offsets of %s: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return fmt.Errorf("end offset of %s: %v", topic, end.Err)
	}
	if end.Offset == 0 {
		return nil
	}
	// Control records are kept so the read can tell it reached the end even
	// when the last offsets are transaction markers.
	rd, err := kgo.NewClient(
		kgo.SeedBrokers(p.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return err
	}
	defer rd.Close()
	for seen := int64(-1); seen < end.Offset-1; {
		fetches := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, fe := range fetches.Errors() {
			return fmt.Errorf("reading %s: %w", topic, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			seen = max(seen, r.Offset)
			if !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
	return nil
}

// prepareSchema makes the tracker hold the schema as of cp's position:
// from the history topic when the checkpoint says it was kept, and from an
// information_schema snapshot for every tracked database the history does
// not cover — which is only the schema at cp if no DDL lies between cp and
// the snapshot. It returns the tracker, the keys to write to the history
// before streaming, and cp (whose position moves to the snapshot when
// there was no checkpoint).
func (t *Tailer) prepareSchema(ctx context.Context, src *sourceDB, pub *publisher, cp Checkpoint, found bool, dbs []string) (*schemaTracker, []string, Checkpoint, error) {
	tr := newSchemaTracker(src.flavor, dbs)
	if err := src.schemaFacts(ctx, tr); err != nil {
		return nil, nil, cp, err
	}
	if found && cp.SchemaHistory {
		if err := pub.loadSchemaHistory(ctx, tr); err != nil {
			return nil, nil, cp, &FatalError{err}
		}
	}
	var missing []string
	for _, db := range dbs {
		if _, ok := tr.dbCharset[db]; !ok {
			missing = append(missing, db)
		}
	}
	if len(missing) == 0 {
		return tr, nil, cp, nil
	}
	snap, cp, err := snapshotUntracked(ctx, src, cp, found, missing)
	if err != nil {
		return nil, nil, cp, err
	}
	for db := range snap.dbs {
		tr.dbCharset[db] = snap.dbCharset[db]
	}
	for k, def := range snap.tables {
		tr.tables[k] = def
	}
	t.log.Info("schema history: read the captured databases' schema from information_schema", "databases", missing, "tables", len(snap.tables), "position", cp.Position)
	return tr, snap.allKeys(), cp, nil
}

// snapshotUntracked reads the schema of the databases missing from the
// history from information_schema, and checks that it is the schema at
// cp: no DDL ran on them between cp and the snapshot. Without a checkpoint
// the stream starts at the snapshot (cp's position moves there).
func snapshotUntracked(ctx context.Context, src *sourceDB, cp Checkpoint, found bool, missing []string) (*schemaTracker, Checkpoint, error) {
	for attempt := 1; ; attempt++ {
		snap := newSchemaTracker(src.flavor, missing)
		before, err := src.currentPosition(ctx)
		if err != nil {
			return nil, cp, err
		}
		if err := src.snapshotSchema(ctx, snap); err != nil {
			return nil, cp, err
		}
		after, err := src.currentPosition(ctx)
		if err != nil {
			return nil, cp, err
		}
		from := cp.Position
		if !found {
			from = before
		}
		ddl, err := src.ddlBetween(ctx, from, after, snap)
		if errors.Is(err, ErrPurged) {
			// E.g. a checkpoint from another server (failover) or purged
			// binlogs: the DDL between cannot be ruled out.
			return nil, cp, fatalf("readside has no schema history for database(s) %s at its checkpoint %s and cannot scan this source's binlog from there (%v) to rule out DDL since. "+
				"Fix: set binlog_row_metadata=FULL on the source and restart, or re-snapshot (docs/operations.md, \"schema history\")", strings.Join(missing, ", "), cp.Position, err)
		}
		if err != nil {
			return nil, cp, err
		}
		if ddl != "" {
			if !found && attempt < 5 {
				continue // a DDL raced the snapshot: take it again
			}
			if !found {
				return nil, cp, fatalf("DDL kept changing the captured databases while readside read their schema (last: %q): retry when no DDL runs, or set binlog_row_metadata=FULL", ddl)
			}
			return nil, cp, fatalf("readside has no schema history for database(s) %s at its checkpoint %s, and DDL ran on them since (%q), so the schema at the checkpoint is unknown. "+
				"Fix: set binlog_row_metadata=FULL on the source and restart (the binlog then names the columns), or re-snapshot the affected tables (docs/operations.md, \"schema history\")",
				strings.Join(missing, ", "), cp.Position, ddl)
		}
		if !found {
			cp.Position = before
		}
		return snap, cp, nil
	}
}
