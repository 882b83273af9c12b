package httpapi

// The rebuilds and backfills /status shows. `readside replay --rebuild`
// and `--backfill` run in a process of their own, so the daemon knows of
// them only through what they store in the sink: their phase in
// `_readside_rebuilds` (sinks.Rebuilder.SetPhase) and the offsets their
// own identity applied (P__rebuild, P__backfill) in `_readside_offsets`.
// Read only: /status never writes.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/rebuild"
)

// RebuildStatus is one rebuild or backfill under way (or stopped
// unfinished: its row stays until a rerun finishes it).
type RebuildStatus struct {
	Projection string `json:"projection"`
	// Kind: "rebuild" (readside replay --rebuild) or "backfill"
	// (--backfill).
	Kind string `json:"kind"`
	// Phase of a rebuild: "filling" (the shadow table, from the earliest
	// offsets) or "catching-up" (swapped in, applying what the live
	// projector applied to the old table meanwhile); a backfill's is
	// "filling".
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Applied and End are offsets summed over the partitions of the
	// topics it reads: where its identity stored it is (the lowest over
	// the shards) and the topics' last stable offsets now. Percent is
	// Applied of End.
	Applied int64   `json:"applied"`
	End     int64   `json:"end"`
	Percent float64 `json:"percent"`
	Error   string  `json:"error,omitempty"`
}

// Summary is the line `readside status` prints for s.
func (s RebuildStatus) Summary() string {
	line := fmt.Sprintf("%s %s: %s, %.1f%% (%d of %d offsets)", s.Kind, s.Projection, s.Phase, s.Percent, s.Applied, s.End)
	if !s.StartedAt.IsZero() {
		line += ", started " + ago(s.StartedAt)
	}
	if s.Error != "" {
		line += "; error: " + s.Error
	}
	return line
}

// rebuildRow is a row of `_readside_rebuilds`.
type rebuildRow struct {
	name, phase      string
	started, updated time.Time
}

// rebuilds are the rebuilds and backfills recorded on the sink servers
// of the projections.
func (c *Collector) rebuilds(ctx context.Context) ([]RebuildStatus, error) {
	var out []RebuildStatus
	var errs []error
	for _, p := range c.opts.Projections {
		// A route that cannot be resolved falls back to the config's
		// servers; the projection's own status names the error.
		r, _ := c.route(ctx, p)
		servers := r.Servers
		rows, readErr := c.rebuildRows(ctx, servers, p.Name)
		if readErr != nil {
			errs = append(errs, fmt.Errorf("projection %s: %w", p.Name, readErr))
		}
		for _, row := range rows {
			s := RebuildStatus{Projection: p.Name, Kind: "rebuild", Phase: row.phase, StartedAt: row.started, UpdatedAt: row.updated}
			id, topics := p.Name+rebuild.RebuildSuffix, p.Topics
			if row.name != p.Name {
				// A backfill's phase is the tag of its columns.
				s.Kind, s.Phase = "backfill", "filling"
				id, topics = p.Name+projections.BackfillSuffix, []string{p.Topic}
			}
			if len(topics) == 0 {
				topics = []string{p.Topic}
			}
			if err := c.rebuildProgress(ctx, &s, servers, id, topics); err != nil {
				s.Error = err.Error()
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Projection != out[j].Projection {
			return out[i].Projection < out[j].Projection
		}
		return out[i].Kind < out[j].Kind
	})
	return out, errors.Join(errs...)
}

// rebuildRows reads the rows of projection's rebuild and backfill. The
// row is on the sink's first shard; every server is read, as a reshard
// may have moved the projection since.
func (c *Collector) rebuildRows(ctx context.Context, servers []SinkDSN, projection string) ([]rebuildRow, error) {
	seen := map[string]bool{}
	var out []rebuildRow
	var errs []error
	for _, s := range servers {
		db, err := c.db(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rows, err := db.QueryContext(ctx, "SELECT projection, phase, UNIX_TIMESTAMP(started_at), UNIX_TIMESTAMP(updated_at) FROM `_readside_rebuilds` WHERE projection IN (?, ?)", projection, projection+projections.BackfillSuffix)
		if err != nil {
			var me *driver.MySQLError
			if errors.As(err, &me) && me.Number == 1146 { // ER_NO_SUCH_TABLE: never rebuilt
				continue
			}
			errs = append(errs, fmt.Errorf("sink %s: reading _readside_rebuilds: %w", s.Name, err))
			continue
		}
		for rows.Next() {
			// Seconds, not TIMESTAMPs: the sink DSN need not set parseTime.
			var r rebuildRow
			var started, updated float64
			if err := rows.Scan(&r.name, &r.phase, &started, &updated); err != nil {
				errs = append(errs, fmt.Errorf("sink %s: reading _readside_rebuilds: %w", s.Name, err))
				break
			}
			r.started, r.updated = unixTime(started), unixTime(updated)
			if !seen[r.name] {
				seen[r.name] = true
				out = append(out, r)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			errs = append(errs, fmt.Errorf("sink %s: reading _readside_rebuilds: %w", s.Name, err))
		}
	}
	return out, errors.Join(errs...)
}

// rebuildProgress sets s's Applied, End and Percent: id's stored offsets
// on the servers against the topics' last stable offsets.
func (c *Collector) rebuildProgress(ctx context.Context, s *RebuildStatus, servers []SinkDSN, id string, topics []string) error {
	ends, err := c.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	target := event.Offsets{}
	ends.Each(func(o kadm.ListedOffset) { target.Set(o.Topic, o.Partition, o.Offset) })
	stored := make([]event.Offsets, 0, len(servers))
	for _, sv := range servers {
		offs := event.Offsets{}
		for _, t := range topics {
			got, err := c.readOffsets(ctx, sv, id, t)
			if err != nil {
				return fmt.Errorf("sink %s: %w", sv.Name, err)
			}
			for part, next := range got {
				offs.Set(t, part, next)
			}
		}
		stored = append(stored, offs)
	}
	s.Applied, s.End, _ = rebuild.CaughtUp(stored, nil, target)
	s.Percent = 100
	if s.End > 0 {
		s.Percent = math.Floor(1000*float64(s.Applied)/float64(s.End)) / 10
	}
	return nil
}

func unixTime(secs float64) time.Time {
	return time.UnixMicro(int64(math.Round(secs * 1e6))).UTC()
}
