package main

// `readside status` with neither the daemon nor the broker answering (the
// usual case with the embedded broker, which runs inside `readside run`):
// what each projection's sinks store about it, read from its read table
// and the _readside_ bookkeeping tables. Health, lag, consumer groups and
// the tailer's checkpoint live in the daemon and the broker, and the
// report says so once instead of failing per projection.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/reshard"
	"github.com/readside/readside/sinks"
)

// storedReport is `readside status --json` when only the sinks answer.
type storedReport struct {
	Time        time.Time          `json:"time"`
	From        string             `json:"from"` // "sinks"
	Unavailable string             `json:"unavailable"`
	Projections []storedProjection `json:"projections"`
	// The source's failed snapshot requests (httpapi.SourceStatus has the same).
	SnapshotFailures      []cdc.SnapshotFailure `json:"snapshot_failures,omitempty"`
	SnapshotFailuresError string                `json:"snapshot_failures_error,omitempty"`
	Reshards              []reshard.Status      `json:"reshards,omitempty"`
}

type storedProjection struct {
	Name  string `json:"name"`
	Table string `json:"table"`
	// Sink is the sink the projection applies through and Generation its
	// routing generation (0: the config's, never resharded).
	Sink       string        `json:"sink"`
	Generation uint64        `json:"generation"`
	Sinks      []storedShard `json:"sinks"`
	// RoutingError: the sink serving it could not be resolved; Sinks are
	// then the config's.
	RoutingError string `json:"routing_error,omitempty"`
}

// storedShard is one sink server (a whole sink or one shard).
type storedShard struct {
	Sink string `json:"sink"`
	// Rows in the read table; -1 when it could not be counted.
	Rows int64 `json:"rows"`
	// Partitions with an applied offset, and those offsets summed: the
	// records this shard's bookkeeping says it has consumed.
	Partitions int   `json:"partitions"`
	Applied    int64 `json:"applied_offsets"`
	// Version is the newest source version applied, SourceTime its source
	// commit time and AppliedAt when it was applied (_readside_watermarks).
	Version    uint64     `json:"last_version,omitempty"`
	SourceTime *time.Time `json:"last_source_commit,omitempty"`
	AppliedAt  *time.Time `json:"last_applied_at,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// countTimeout bounds the COUNT(*) of one read table: status must answer
// even for a table too big to count quickly.
const countTimeout = 5 * time.Second

// readStored reads every projection's stored state from its sinks.
func readStored(ctx context.Context, cfg config.Config, unavailable string) (storedReport, error) {
	rep := storedReport{Time: time.Now().UTC(), From: "sinks", Unavailable: unavailable, Projections: []storedProjection{}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		return rep, err
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	rep.SnapshotFailures, rep.SnapshotFailuresError = storedSnapshotFailures(ctx, cfg)
	rr := newReshardReader(cfg)
	rep.Reshards, _ = rr.read(ctx) // a sink that cannot be read is reported per projection
	rr.close()
	dbs := map[string]*sql.DB{}
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	// Each projection's state is on the sink that serves it now (a
	// reshard may have moved it off the one the config names).
	opener := newSinkOpener(cfg)
	defer opener.close()
	for _, p := range ps {
		sp := storedProjection{Name: p.Name, Table: p.Table, Sinks: []storedShard{}}
		sinkName := p.Sink
		if at, err := opener.resolve(ctx, p); err != nil {
			sp.RoutingError = err.Error()
		} else {
			sinkName, sp.Generation = at.Name, at.Generation
		}
		sp.Sink = sinkName
		for _, t := range sinkServers(sinkName, cfg.Sinks[sinkName]) {
			db, ok := dbs[t.DSN]
			if !ok {
				if db, err = openSinkDB(t.DSN); err != nil {
					sp.Sinks = append(sp.Sinks, storedShard{Sink: t.Name, Rows: -1, Error: fmt.Sprintf("sink DSN: %v", err)})
					continue
				}
				dbs[t.DSN] = db
			}
			sp.Sinks = append(sp.Sinks, readShard(ctx, db, t.Name, p))
		}
		rep.Projections = append(rep.Projections, sp)
	}
	return rep, nil
}

func openSinkDB(dsn string) (*sql.DB, error) {
	dcfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := driver.NewConnector(dcfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	return db, nil
}

// readShard reads one sink server's state of p. A missing table means
// nothing applied yet, not an error.
func readShard(ctx context.Context, db *sql.DB, name string, p *projections.Projection) storedShard {
	s := storedShard{Sink: name, Rows: -1}
	var errs []string
	noTable := func(err error) bool {
		var me *driver.MySQLError
		return errors.As(err, &me) && me.Number == 1146 // ER_NO_SUCH_TABLE
	}
	err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(next_offset), 0) FROM `_readside_offsets` WHERE projection = ?", p.Name).Scan(&s.Partitions, &s.Applied)
	if err != nil && !noTable(err) {
		errs = append(errs, fmt.Sprintf("reading _readside_offsets: %v", err))
	}
	var version sql.NullInt64
	var sourceTS sql.NullInt64
	var appliedAt sql.NullFloat64
	err = db.QueryRowContext(ctx, "SELECT MAX(version), MAX(source_ts), UNIX_TIMESTAMP(MAX(applied_at)) FROM `_readside_watermarks` WHERE projection = ?", p.Name).Scan(&version, &sourceTS, &appliedAt)
	switch {
	case err != nil && !noTable(err):
		errs = append(errs, fmt.Sprintf("reading _readside_watermarks: %v", err))
	case err == nil && version.Valid:
		s.Version = uint64(version.Int64)
		if sourceTS.Valid && sourceTS.Int64 > 0 {
			t := time.Unix(sourceTS.Int64, 0).UTC()
			s.SourceTime = &t
		}
		if appliedAt.Valid {
			t := time.Unix(int64(appliedAt.Float64), 0).UTC()
			s.AppliedAt = &t
		}
	}
	cctx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	err = db.QueryRowContext(cctx, "SELECT COUNT(*) FROM "+sinks.QuoteIdent(p.Table)).Scan(&s.Rows)
	switch {
	case err == nil:
	case noTable(err):
		s.Rows = 0
		errs = append(errs, fmt.Sprintf("read table %s does not exist yet (readside run or readside plan --apply creates it)", p.Table))
	case cctx.Err() != nil && ctx.Err() == nil:
		s.Rows = -1 // too big to count within countTimeout: not a fault
	default:
		errs = append(errs, fmt.Sprintf("counting %s: %v", p.Table, err))
	}
	s.Error = strings.Join(errs, "; ")
	return s
}

// printStored writes a storedReport for humans, within 100 columns.
func printStored(w io.Writer, r storedReport) {
	fmt.Fprintf(w, "readside status at %s, from the sinks only\n", r.Time.Format(time.RFC3339))
	fmt.Fprintln(w, wrap(r.Unavailable, helpWidth, "\n"))
	printSnapshotFailures(w, r.SnapshotFailures, r.SnapshotFailuresError)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECTION\tSINK\tROWS\tAPPLIED\tLAST SOURCE COMMIT\tAPPLIED AT")
	for _, p := range r.Projections {
		if len(p.Sinks) == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t\t\t\n", p.Name)
		}
		for _, s := range p.Sinks {
			rows := "?"
			if s.Rows >= 0 {
				rows = fmt.Sprint(s.Rows)
			}
			src, at := "-", "-"
			if s.SourceTime != nil {
				src = s.SourceTime.Format(time.RFC3339)
			}
			if s.AppliedAt != nil {
				at = s.AppliedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d in %d partitions\t%s\t%s\n", p.Name, s.Sink, rows, s.Applied, s.Partitions, src, at)
		}
	}
	tw.Flush()
	for _, p := range r.Projections {
		if p.Generation > 0 {
			fmt.Fprintln(w, wrap(fmt.Sprintf("%s applies through sink %s at routing generation %d (a reshard moved it)", p.Name, p.Sink, p.Generation), helpWidth, "\n    "))
		}
		if p.RoutingError != "" {
			fmt.Fprintln(w, wrap(fmt.Sprintf("%s: %s", p.Name, p.RoutingError), helpWidth, "\n    "))
		}
		for _, s := range p.Sinks {
			if s.Error != "" {
				fmt.Fprintln(w, wrap(fmt.Sprintf("%s on %s: %s", p.Name, s.Sink, s.Error), helpWidth, "\n    "))
			}
		}
	}
	printReshards(w, r.Reshards)
}
