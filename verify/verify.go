// Package verify compares a projection's read table, over every shard of
// its sink, with what the projection's declaration computes from the
// source (columns, where filter, joins, shard placement), and repairs the
// differences through the normal projection path. docs/operations.md
// ("Verifying a read table") is the user's guide, docs/design/verification.md the
// argument.
package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/keyset"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlflavor"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// Options tune a run.
type Options struct {
	// ChunkRows is the source rows per chunk (default 1000).
	ChunkRows int
	// MaxRowsPerSecond throttles the scan (0: as fast as the servers go).
	MaxRowsPerSecond int
	// MaxSourceLag pauses the scan while the source (a replica) is
	// further behind its primary than this (0: no ceiling).
	MaxSourceLag time.Duration
	// Settle is how long rows that differ are re-checked before they count
	// as drift (default 30s): live lag resolves within it.
	Settle time.Duration
	// Samples is how many keys of each kind the report lists (default 10).
	Samples int
	// StateFile, when set, records progress after every chunk so a run
	// that crashed resumes where it stopped.
	StateFile string
	// Progress is where the scan shows how far it is (Out nil: nowhere);
	// each run draws on a copy of its own.
	Progress progress.Line
	// Ends, when set, let re-checks wait until the projection has
	// applied everything published so far (else they wait by time only).
	Ends Ends
	Log  *slog.Logger
}

// Ends reads the last stable offsets of topics, per partition: what a
// projection that applied everything published so far has consumed up
// to, less the commit marker that ends a Kafka transaction. The Kafka
// client that reads them is the caller's (projector.Ends), so verify
// links none.
type Ends func(ctx context.Context, topics ...string) (event.Offsets, error)

func (o *Options) defaults() {
	if o.ChunkRows <= 0 {
		o.ChunkRows = 1000
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	if o.Samples <= 0 {
		o.Samples = 10
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Verifier checks one projection.
type Verifier struct {
	p    *projections.Projection
	pl   *plan
	src  *sql.DB
	sink *sinks.Sharded
	opts Options

	keyKinds  keyBinder // learned from the first source rows
	shardIdx  int       // index of the shard_by column in the key; -1: none
	shardBits int       // the width of a BIT shard_by column
	// collate is, per compared column of an aggregate, the key function
	// of the collation its cells are matched and compared under (nil:
	// byte for byte; collation.go).
	collate []func(string) string
	// weigh is, per compared column of an aggregate, how the servers
	// weigh its cells when expr has no key function for its collation
	// (collation.go): "" not at all, else the WEIGHT_STRING expression
	// pattern both sides select.
	weigh []string
}

// OpenSource connects to the source for verification with every
// reader's session settings (sourcedb: the where filter's text read as
// MySQL's defaults read it, TIMESTAMPs in UTC) and group_concat_max_len as the sink's sessions have it (1 GiB, the largest
// max_allowed_packet): JSON_ARRAYAGG is cut at it, and a children array
// must come out whole on both sides (children.go).
// It connects as the tailer does: source.dsn with source.tls.
func OpenSource(src config.Source) (*sql.DB, error) {
	return sourcedb.Open(src.DSN.Reveal(), sourcedb.Options{MaxConns: 4, GroupConcatMax: 1 << 30, TLS: src.TLS})
}

// New prepares a verifier; it does no I/O.
func New(p *projections.Projection, src *sql.DB, sink *sinks.Sharded, opts Options) *Verifier {
	opts.defaults()
	v := &Verifier{p: p, pl: newPlan(p, nil), src: src, sink: sink, opts: opts, shardIdx: -1}
	if p.ShardBy != "" && !p.Replicated && len(sink.Shards) > 1 {
		v.shardIdx = slices.Index(p.Key, p.ShardBy)
	}
	return v
}

// Diff is one read key that differs.
type Diff struct {
	Kind string            `json:"kind"` // missing, extra, different, misplaced
	Key  map[string]string `json:"key"`
	// Shard is the sink shard holding the row (extra, different,
	// misplaced) or that should (missing).
	Shard string `json:"shard"`
	// Columns are the differing columns (different).
	Columns []ColumnDiff `json:"columns,omitempty"`

	key        Key
	shardIdx   int
	srcExists  bool // the source row exists (it may fail the filter)
	sinkVer    uint64
	parentDiff []int // joins (index) whose copied columns differ
	srcRow     []*string
	// match is the text the row's key was matched by (matchText): under
	// a collation one group's key may be spelled one way in one read of
	// the source and another way in the next, and a re-check finds its
	// suspect by this.
	match string
	// publish: the source row must flow through the projector again (an
	// r event fixes a missing, different, or filtered-out row).
	publish bool
}

// ColumnDiff is one column's value on each side (nil: NULL).
type ColumnDiff struct {
	Name   string  `json:"name"`
	Source *string `json:"source"`
	Sink   *string `json:"sink"`
}

// Report is a run's result.
type Report struct {
	Projection string    `json:"projection"`
	Table      string    `json:"table"`
	Sink       string    `json:"sink"`
	Shards     int       `json:"shards"`
	Started    time.Time `json:"started"`
	Seconds    float64   `json:"seconds"`
	SourceRows int64     `json:"source_rows"`
	SinkRows   int64     `json:"sink_rows"`
	Chunks     int64     `json:"chunks"`
	// ChunksDiffering had checksums that differed; their rows were compared.
	ChunksDiffering int64 `json:"chunks_differing"`
	Missing         int64 `json:"missing"`
	Extra           int64 `json:"extra"`
	Different       int64 `json:"different"`
	Misplaced       int64 `json:"misplaced"`
	// MisplacedByShard counts misplaced rows by the shard holding them.
	MisplacedByShard map[string]int64 `json:"misplaced_by_shard,omitempty"`
	// Unsettled keys changed on every re-check until Settle ran out: they
	// are being written right now, so their difference is not drift.
	Unsettled int64 `json:"unsettled"`
	// Behind keys differed the same way on every re-check while the
	// projection never caught up with its topics: it is stalled or far
	// behind, so the table is not equal (Equal), though not drift either.
	Behind  int64  `json:"behind"`
	Samples []Diff `json:"samples"`
	Resumed bool   `json:"resumed,omitempty"`
	// Repair, when --repair ran.
	Repair *RepairResult `json:"repair,omitempty"`

	diffs []Diff // every confirmed difference (repair works from these)
}

// Drift is the number of differing rows.
func (r *Report) Drift() int64 { return r.Missing + r.Extra + r.Different + r.Misplaced }

// Equal: no drift, and no difference left that only a projection which
// never caught up could explain.
func (r *Report) Equal() bool { return r.Drift() == 0 && r.Behind == 0 }

// srcRow and sinkRow are fetched rows: cells in plan.cols order (nil:
// NULL).
type srcRow struct {
	cells  []*string
	passes bool
	// weights are the cells' collation weights where Verifier.weigh
	// asks for them (nil elsewhere, or all nil).
	weights []*string
}

type sinkCopy struct {
	cells   []*string
	version uint64
	shard   int
	weights []*string
}

// Run verifies the whole read table.
func (v *Verifier) Run(ctx context.Context) (*Report, error) {
	if err := v.typeExpressions(ctx); err != nil {
		return nil, err
	}
	if err := v.learnChildKeys(ctx); err != nil {
		return nil, err
	}
	if err := v.learnCollations(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Projection: v.p.Name, Table: v.p.Table, Sink: v.sink.Name, Shards: len(v.sink.Shards), Started: time.Now().UTC()}
	if v.p.Replicated && len(v.sink.Shards) > 1 {
		// Every shard holds a whole copy: verify each on its own.
		for i := range v.sink.Shards {
			one := *v
			one.sink = &sinks.Sharded{Name: v.sink.Name, Shards: v.sink.Shards[i : i+1]}
			if one.opts.StateFile != "" {
				one.opts.StateFile += "." + strconv.Itoa(i)
			}
			r, err := one.run(ctx)
			if err != nil {
				return nil, err
			}
			rep.merge(r, v.opts.Samples)
		}
		rep.Seconds = time.Since(rep.Started).Seconds()
		return rep, nil
	}
	r, err := v.run(ctx)
	if err != nil {
		return nil, err
	}
	r.Started = rep.Started
	r.Seconds = time.Since(rep.Started).Seconds()
	return r, nil
}

func (r *Report) merge(o *Report, samples int) {
	r.SourceRows += o.SourceRows
	r.SinkRows += o.SinkRows
	r.Chunks += o.Chunks
	r.ChunksDiffering += o.ChunksDiffering
	r.Missing += o.Missing
	r.Extra += o.Extra
	r.Different += o.Different
	r.Misplaced += o.Misplaced
	for sh, n := range o.MisplacedByShard {
		if r.MisplacedByShard == nil {
			r.MisplacedByShard = map[string]int64{}
		}
		r.MisplacedByShard[sh] += n
	}
	r.Unsettled += o.Unsettled
	r.Behind += o.Behind
	r.Resumed = r.Resumed || o.Resumed
	r.diffs = append(r.diffs, o.diffs...)
	r.Samples = sampleDiffs(r.diffs, samples)
}

func (v *Verifier) run(ctx context.Context) (*Report, error) {
	rep := &Report{Projection: v.p.Name, Table: v.p.Table, Sink: v.sink.Name, Shards: len(v.sink.Shards)}
	st, err := loadState(v.opts.StateFile, v.p)
	if err != nil {
		return nil, err
	}
	if st.Resumed {
		rep.Resumed = true
		v.opts.Log.Info("verify: resuming", "projection", v.p.Name, "after", st.After, "rows", st.SourceRows)
	}
	suspects := map[string]*suspect{}
	for _, d := range st.Suspects {
		suspects[Key(d).text()] = &suspect{key: Key(d)}
	}
	if st.Kinds != nil {
		v.keyKinds = st.Kinds
	} else if err := v.learnKinds(ctx); err != nil {
		return nil, err
	}
	if err := v.learnShardBits(ctx); err != nil {
		return nil, err
	}
	if err := v.learnFloats(ctx); err != nil {
		return nil, err
	}
	estimate := v.estimateRows(ctx)
	prog := newScanLine(v.opts.Progress, v.p.Name, estimate, st.SourceRows)
	lo := st.After
	started := time.Now()
	scanned := st.SourceRows
	rep.SourceRows, rep.SinkRows, rep.Chunks, rep.ChunksDiffering = st.SourceRows, st.SinkRows, st.Chunks, st.ChunksDiffering
	for {
		if err := v.waitSourceLag(ctx); err != nil {
			return nil, err
		}
		hi, err := v.boundary(ctx, lo)
		if err != nil {
			return nil, err
		}
		sc, sx, err := v.sourceChecksum(ctx, lo, hi)
		if err != nil {
			return nil, err
		}
		kc, kx, misplaced, err := v.sinkChecksum(ctx, lo, hi)
		if err != nil {
			return nil, err
		}
		rep.Chunks++
		rep.SourceRows += sc
		rep.SinkRows += kc
		if sc != kc || sx != kx || misplaced {
			rep.ChunksDiffering++
			diffs, err := v.compareRange(ctx, lo, hi)
			if err != nil {
				return nil, err
			}
			for _, d := range diffs {
				suspects[d.suspectID()] = &suspect{key: d.key}
			}
		}
		scanned += max(sc, kc)
		prog.update(scanned, rep.ChunksDiffering, len(suspects))
		if hi == nil {
			break
		}
		lo = hi
		if err := saveState(v.opts.StateFile, v.p, &state{After: lo, Kinds: v.keyKinds, SourceRows: rep.SourceRows, SinkRows: rep.SinkRows,
			Chunks: rep.Chunks, ChunksDiffering: rep.ChunksDiffering, Suspects: suspectKeys(suspects)}); err != nil {
			return nil, err
		}
		if err := v.throttle(ctx, started, scanned-st.SourceRows); err != nil {
			return nil, err
		}
	}
	prog.done()
	diffs, unsettled, behind, err := v.settle(ctx, suspects)
	if err != nil {
		return nil, err
	}
	rep.Unsettled, rep.Behind = int64(unsettled), int64(behind)
	rep.diffs = diffs
	for _, d := range diffs {
		switch d.Kind {
		case "missing":
			rep.Missing++
		case "extra":
			rep.Extra++
		case "different":
			rep.Different++
		case "misplaced":
			rep.Misplaced++
		}
	}
	rep.MisplacedByShard = countMisplaced(diffs)
	rep.Samples = sampleDiffs(diffs, v.opts.Samples)
	if err := removeState(v.opts.StateFile); err != nil {
		return nil, err
	}
	return rep, nil
}

// learnKinds reads the key columns' types from the source.
func (v *Verifier) learnKinds(ctx context.Context) error {
	rows, err := v.src.QueryContext(ctx, "SELECT "+strings.Join(v.pl.srcKey, ", ")+" FROM "+v.pl.sourceFrom(false, false)+" LIMIT 0")
	if err != nil {
		return fmt.Errorf("reading the key types of %s.%s: %w", v.p.SourceDB, v.p.SourceTbl, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	v.keyKinds = make(keyBinder, len(cts))
	for i, ct := range cts {
		v.keyKinds[i] = kindOf(ct)
	}
	return nil
}

// learnFloats reads which read columns are FLOATs on the sink (plan.floats).
func (v *Verifier) learnFloats(ctx context.Context) error {
	v.pl.floats = nil
	rows, err := v.sink.Shards[0].DB().QueryContext(ctx, "SELECT "+strings.Join(v.pl.readExprs(), ", ")+" FROM "+q(v.p.Table)+" LIMIT 0")
	if err != nil {
		return fmt.Errorf("reading the column types of %s: %w", v.p.Table, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	floats := make([]bool, len(cts))
	for i, ct := range cts {
		floats[i] = strings.EqualFold(ct.DatabaseTypeName(), "FLOAT")
	}
	v.pl.floats = floats
	return nil
}

// estimateRows is about how many rows the scan compares, for its
// percentage: the source table's row estimate, when the scan's rows are
// the table's. An aggregate compares groups and a filtered projection
// the rows its where passes, neither known before the scan (a count
// would read the table once more): 0, no percentage.
func (v *Verifier) estimateRows(ctx context.Context) int64 {
	if v.p.Aggregation != nil || v.p.Where != nil {
		return 0
	}
	var n sql.NullInt64
	_ = v.src.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", v.p.SourceDB, v.p.SourceTbl).Scan(&n)
	return n.Int64
}

// boundary is the last key of the chunk after lo (nil: the chunk runs to
// the end of the table).
func (v *Verifier) boundary(ctx context.Context, lo Key) (Key, error) {
	query, args := v.boundarySQL(lo)
	rows, err := v.src.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("finding the next chunk of %s.%s: %w", v.p.SourceDB, v.p.SourceTbl, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	cells, err := scanCells(rows, v.keyKinds)
	if err != nil {
		return nil, err
	}
	k := make(Key, len(cells))
	for i, c := range cells {
		k[i] = *c
	}
	return k, rows.Err()
}

// boundarySQL reads the key ChunkRows rows after lo: a keyset page of
// one row at offset ChunkRows-1, which reads the key's index only.
func (v *Verifier) boundarySQL(lo Key) (string, []any) {
	pg := keyset.Page{Select: strings.Join(v.pl.srcKeyExprs(), ", "), From: v.pl.sourceFrom(true, false), Key: v.pl.srcKey,
		Limit: 1, Offset: v.opts.ChunkRows - 1}
	var after []any
	if lo != nil {
		after = v.keyKinds.bind(lo)
	}
	return pg.SQL(after)
}

func (v *Verifier) sourceChecksum(ctx context.Context, lo, hi Key) (int64, uint64, error) {
	where, args := rangeWhere(v.pl.srcKey, v.keyKinds, lo, hi)
	var n int64
	var x uint64
	err := v.src.QueryRowContext(ctx, checksumSelect(v.pl.srcExprs())+" FROM "+v.pl.sourceFrom(true, true)+" WHERE "+where, args...).Scan(&n, &x)
	if err != nil {
		return 0, 0, fmt.Errorf("checksum of %s.%s: %w", v.p.SourceDB, v.p.SourceTbl, err)
	}
	return n, x, nil
}

// sinkChecksum combines every shard's checksum of the chunk, and reports
// whether a shard holds a row outside its key range (a checksum cannot
// see that: the same row on another shard hashes the same).
func (v *Verifier) sinkChecksum(ctx context.Context, lo, hi Key) (int64, uint64, bool, error) {
	where, args := rangeWhere(v.pl.readKey, v.keyKinds, lo, hi)
	var total int64
	var xor uint64
	misplaced := false
	for i, sh := range v.sink.Shards {
		var n int64
		var x uint64
		if err := sh.DB().QueryRowContext(ctx, checksumSelect(v.pl.readExprs())+" FROM "+q(v.p.Table)+" WHERE "+where, args...).Scan(&n, &x); err != nil {
			return 0, 0, false, fmt.Errorf("checksum of %s on shard %s: %w", v.p.Table, sh.Range.Text, err)
		}
		total += n
		xor ^= x
		if v.shardIdx < 0 || n == 0 {
			continue
		}
		// shard_by leads the primary key: DISTINCT reads the index only.
		rows, err := sh.DB().QueryContext(ctx, "SELECT DISTINCT "+v.pl.exact(v.shardIdx, v.pl.readKey[v.shardIdx])+" FROM "+q(v.p.Table)+" WHERE "+where, args...)
		if err != nil {
			return 0, 0, false, fmt.Errorf("shard keys of %s on shard %s: %w", v.p.Table, sh.Range.Text, err)
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return 0, 0, false, err
			}
			if v.home(cellText(b, v.keyKinds[v.shardIdx])) != i {
				misplaced = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, 0, false, err
		}
	}
	return total, xor, misplaced, nil
}

// cellText is a scanned value as the report and comparisons use it. BIT
// values arrive as bytes; they are numbers in events and here.
func cellText(b []byte, k kind) string {
	if k == kBit {
		var n big.Int
		return n.SetBytes(b).String()
	}
	return string(b)
}

func scanCells(rows *sql.Rows, kinds []kind) ([]*string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	raw := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make([]*string, len(cols))
	for i, r := range raw {
		if r == nil {
			continue
		}
		k := kText
		if i < len(kinds) {
			k = kinds[i]
		}
		s := cellText(r, k)
		out[i] = &s
	}
	return out, nil
}

// waitSourceLag pauses while the source replica is further behind than
// the ceiling. A source that is not a replica has no lag.
func (v *Verifier) waitSourceLag(ctx context.Context) error {
	if v.opts.MaxSourceLag <= 0 {
		return nil
	}
	for {
		lag, ok, err := replicaLag(ctx, v.src)
		if err != nil || !ok || lag <= v.opts.MaxSourceLag {
			return err
		}
		v.opts.Log.Info("verify: source replica lag above the ceiling; pausing", "lag", lag, "max", v.opts.MaxSourceLag)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// replicaLag reads the source's own replica lag with the statement its
// release has (SHOW SLAVE STATUS is gone from MySQL 8.4).
func replicaLag(ctx context.Context, db *sql.DB) (time.Duration, bool, error) {
	server, err := sqlflavor.Detect(ctx, db)
	if err != nil {
		return 0, false, err
	}
	d := sqlflavor.For(server)
	res, err := sqlflavor.Query(ctx, db, d.ReplicaStatus)
	if err != nil {
		return 0, false, fmt.Errorf("reading the source's replica lag (%s; grant %s or drop --max-source-lag): %w", d.ReplicaStatus, d.ReplicaStatusPrivilege, err)
	}
	lag, ok, err := sqlflavor.ParseReplicaLag(res)
	if errors.Is(err, sqlflavor.ErrReplicationStopped) {
		return 0, false, fmt.Errorf("%w (%s is NULL): start it, or drop --max-source-lag", err, d.SecondsBehind)
	}
	return lag, ok, err
}

// throttle sleeps so the scan stays under MaxRowsPerSecond.
func (v *Verifier) throttle(ctx context.Context, started time.Time, rows int64) error {
	if v.opts.MaxRowsPerSecond <= 0 {
		return nil
	}
	due := started.Add(time.Duration(float64(rows) / float64(v.opts.MaxRowsPerSecond) * float64(time.Second)))
	if wait := time.Until(due); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}
