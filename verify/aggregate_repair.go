package verify

// Repairing an aggregate projection. A group row is a sum over the
// contributions the sink keeps per source row, so the two re-publishing
// alone cannot fix are fixed on the sink, and the rest through the
// projector:
//
//  1. per differing group, its members (the source rows whose stored
//     contribution is to it) are read from its home shard, and the source
//     is asked which of them still exist;
//  2. in one sink transaction (sinks.RepairGroups) the members that no
//     longer exist are withdrawn at their own version, and the groups are
//     rebuilt from the contributions: a hand-edited, missing or leftover
//     group row now agrees with its contributions;
//  3. the source rows of the groups (by the group expression) and the
//     members whose source row is now in another group (by primary key)
//     are re-published: a stored
//     contribution that is stale (an event the sink never got) is
//     replaced at a new version, and the projector moves the difference
//     between the groups;
//  4. the parent rows of groups whose joined columns differ are
//     re-published: the join's state changes only with a parent event.
//
// After 2 a group row agrees with the contributions and after 3 the
// contributions agree with the source; deltas keep the first true in
// whatever order the projector's batches and the snapshot land, so the
// groups converge. A group row on a shard its key range does not name is
// deleted there (version-guarded): no contribution on that shard is to
// it, so nothing else would ever remove it.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/readside/readside/sinks"
)

func (v *Verifier) repairAggregate(ctx context.Context, rep *Report, request Requester, wait time.Duration) (*RepairResult, error) {
	res := &RepairResult{}
	start := time.Now()
	seen := map[string]bool{}
	var keys []Key
	byShard := map[int][]Key{}
	for _, d := range rep.diffs {
		if d.Kind == "misplaced" {
			n, err := v.deleteCopy(ctx, d)
			if err != nil {
				return nil, err
			}
			res.Deleted += n
		}
		if seen[d.key.text()] {
			continue
		}
		seen[d.key.text()] = true
		keys = append(keys, d.key)
		home := 0
		if v.shardIdx >= 0 {
			home = v.home(d.key[v.shardIdx])
		}
		byShard[home] = append(byShard[home], d.key)
	}
	src, err := v.sourceKey(ctx)
	if err != nil {
		return nil, err
	}
	var republish []string
	for shard, groups := range byShard {
		bound := make([][]any, len(groups))
		for i, g := range groups {
			bound[i] = v.keyKinds.bind(g)
		}
		sh := v.sink.Shards[shard]
		members, err := sh.GroupMembers(ctx, v.p, bound)
		if err != nil {
			return nil, err
		}
		exists, err := src.existing(ctx, v, members, seen)
		if err != nil {
			return nil, err
		}
		var gone []sinks.Member
		for i, m := range members {
			switch w := exists[i]; w {
			case unreadable, covered:
			case "":
				gone = append(gone, m)
			default:
				republish = append(republish, w)
			}
		}
		if err := sh.RepairGroups(ctx, v.p, gone, bound); err != nil {
			return nil, fmt.Errorf("rebuilding %d groups of %s on shard %s: %w", len(groups), v.p.Table, sh.Range.Text, err)
		}
		// Every shard stores every contribution: the others withdraw them
		// too (their groups are not there).
		for i, other := range v.sink.Shards {
			if i == shard {
				continue
			}
			if err := other.WithdrawContributions(ctx, v.p, gone); err != nil {
				return nil, fmt.Errorf("withdrawing %d contributions to %s on shard %s: %w", len(gone), v.p.Table, other.Range.Text, err)
			}
		}
		res.Withdrawn += len(gone)
		res.Rebuilt += len(groups)
	}
	for _, g := range keys {
		republish = append(republish, v.groupWhere(g))
	}
	table := v.p.SourceDB + "." + v.p.SourceTbl
	for start := 0; start < len(republish); start += keysPerRequest {
		part := republish[start:min(start+keysPerRequest, len(republish))]
		if err := request(ctx, table, strings.Join(part, " OR ")); err != nil {
			return nil, fmt.Errorf("requesting a snapshot of %d keys or groups of %s: %w", len(part), table, err)
		}
		res.SnapshotRequests++
		res.Published += len(part)
	}
	if err := v.republishParents(ctx, rep.diffs, request, res); err != nil {
		return nil, err
	}
	if err := v.republishJoinedGroups(ctx, keys, request, res); err != nil {
		return nil, err
	}
	if err := v.recheck(ctx, keys, res, wait); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// groupWhere selects the source rows of group g (plain SQL text the
// tailer runs on the source table): each group column's expression
// equal to the group's value.
func (v *Verifier) groupWhere(g Key) string {
	var ands []string
	for i, name := range v.p.Key {
		if jg := v.p.Aggregation.JoinedGroupIndex(i); jg != nil {
			ands = append(ands, v.sourceBelow(jg.Join, v.joinedEquals(jg, g[i], i)))
			continue
		}
		ands = append(ands, "("+groupSQL(v.p, name, q)+") = "+literal(v.keyKinds[i], g[i]))
	}
	return "(" + strings.Join(ands, " AND ") + ")"
}

// sourcePK is a source table's primary key: its columns and how their
// values are bound.
type sourcePK struct {
	db, table string
	cols      []string
	kinds     []kind
}

func (v *Verifier) sourceKey(ctx context.Context) (*sourcePK, error) {
	return sourceKeyOf(ctx, v.src, v.p.SourceDB, v.p.SourceTbl, v.p.SourceKeyOf(v.p.SourceDB, v.p.SourceTbl))
}

// sourceKeyOf reads the types of db.table's key: configured (source.keys)
// when set, else its primary key.
func sourceKeyOf(ctx context.Context, src *sql.DB, db, table string, configured []string) (*sourcePK, error) {
	cols, err := keyColumns(ctx, src, db, table, configured)
	if err != nil {
		return nil, err
	}
	pk := &sourcePK{db: db, table: table, cols: cols}
	rows, err := src.QueryContext(ctx, "SELECT "+strings.Join(pk.quoted(), ", ")+" FROM "+q(db)+"."+q(table)+" LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("reading the key types of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	for _, ct := range cts {
		pk.kinds = append(pk.kinds, kindOf(ct))
	}
	return pk, nil
}

func (pk *sourcePK) quoted() []string {
	out := make([]string, len(pk.cols))
	for i, c := range pk.cols {
		out[i] = q(c)
	}
	return out
}

// where selects the source row of primary key values vals (plain SQL
// text the tailer can run too).
func (pk *sourcePK) where(vals []string) string {
	var ands []string
	for j, c := range pk.cols {
		ands = append(ands, q(c)+" = "+literal(pk.kinds[j], vals[j]))
	}
	return "(" + strings.Join(ands, " AND ") + ")"
}

// present says which of the primary key values (cell texts, as scanCells
// prints them) have a row on the source.
func (pk *sourcePK) present(ctx context.Context, src *sql.DB, keys [][]string) ([]bool, error) {
	found, _, err := pk.lookup(ctx, src, keys, nil)
	return found, err
}

// lookup is present that also reads exprs (SQL over the row's bare
// column names) of each row found.
func (pk *sourcePK) lookup(ctx context.Context, src *sql.DB, keys [][]string, exprs []string) ([]bool, [][]*string, error) {
	found := make([]bool, len(keys))
	extra := make([][]*string, len(keys))
	sel := append(pk.quoted(), exprs...)
	for start := 0; start < len(keys); start += keysPerRequest {
		part := keys[start:min(start+keysPerRequest, len(keys))]
		byText := map[string][]int{}
		var conds []string
		for i, vals := range part {
			byText[Key(vals).text()] = append(byText[Key(vals).text()], start+i)
			conds = append(conds, pk.where(vals))
		}
		rows, err := src.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+q(pk.db)+"."+q(pk.table)+" WHERE "+strings.Join(conds, " OR "))
		if err != nil {
			return nil, nil, fmt.Errorf("looking up %d rows of %s.%s on the source: %w", len(part), pk.db, pk.table, err)
		}
		for rows.Next() {
			cells, err := scanCells(rows, pk.kinds)
			if err != nil {
				rows.Close()
				return nil, nil, err
			}
			k := make(Key, len(pk.cols))
			for j := range k {
				if cells[j] != nil {
					k[j] = *cells[j]
				}
			}
			for _, i := range byText[k.text()] {
				found[i], extra[i] = true, cells[len(pk.cols):]
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	return found, extra, nil
}

// values reads a record key (docs/events.md: a JSON object of the
// primary key's columns, each value as events carry it) as cell texts in
// pk.cols order, as scanCells prints the source's: binary values
// decoded from base64. A Debezium key with the JSON converter's schema
// block (kafka.format debezium) is read by its payload; of its values
// only integers and strings read as the source's (a DECIMAL, temporal or
// binary one is encoded by Debezium's own rules: unreadable).
func (pk *sourcePK) values(key []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(key))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, false
	}
	debezium := false
	if payload, ok := m["payload"].(map[string]any); ok && m["schema"] != nil && !slices.Contains(pk.cols, "payload") {
		m, debezium = payload, true
	}
	out := make([]string, len(pk.cols))
	for i, c := range pk.cols {
		if debezium && pk.kinds[i] != kInt && pk.kinds[i] != kText {
			return nil, false
		}
		switch x := m[c].(type) {
		case json.Number:
			out[i] = x.String()
		case string:
			out[i] = x
			if pk.kinds[i] == kBinary {
				b, err := base64.StdEncoding.DecodeString(x)
				if err != nil {
					return nil, false
				}
				out[i] = string(b)
			}
		default:
			return nil, false
		}
	}
	return out, true
}

// unreadable and covered are existing's answers for a member whose key
// does not read as the source's primary key (neither withdrawn nor
// re-published: if it is what differs, the group stays a difference),
// and for one whose source row is in a group being repaired (its group's
// re-publish covers it).
const (
	unreadable = "?"
	covered    = "="
)

// existing says, per member, the WHERE text selecting its source row
// when it exists on the source in a group not in repaired, "" when it
// does not exist, or unreadable or covered.
func (pk *sourcePK) existing(ctx context.Context, v *Verifier, members []sinks.Member, repaired map[string]bool) ([]string, error) {
	out := make([]string, len(members))
	var keys [][]string
	var idx []int
	for i, m := range members {
		vals, ok := pk.values(m.Key)
		if !ok {
			out[i] = unreadable
			continue
		}
		keys = append(keys, vals)
		idx = append(idx, i)
	}
	var group []string
	for i, name := range v.p.Key {
		if jg := v.p.Aggregation.JoinedGroupIndex(i); jg != nil {
			group = append(group, joinedGroupOf(jg, func(c string) string { return q(pk.db) + "." + q(pk.table) + "." + q(c) }))
			continue
		}
		group = append(group, groupSQL(v.p, name, q))
	}
	found, groups, err := pk.lookup(ctx, v.src, keys, group)
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		switch {
		case !found[j]:
		case repaired[v.keyOf(groups[j]).text()]:
			out[i] = covered
		default:
			out[i] = pk.where(keys[j])
		}
	}
	return out, nil
}
