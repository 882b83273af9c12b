package reshard

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// Status is one projection's reshard as `readside status` and /status
// show it: `_readside_reshards` summarised.
type Status struct {
	Projection     string    `json:"projection"`
	FromSink       string    `json:"from_sink"`
	ToSink         string    `json:"to_sink"`
	ToRanges       string    `json:"to_ranges"`
	FromGeneration uint64    `json:"from_generation"`
	Phase          string    `json:"phase"`
	Fill           string    `json:"fill,omitempty"`
	RowsCopied     int64     `json:"rows_copied"`
	RowsRead       int64     `json:"rows_read"`
	RowsTotal      int64     `json:"rows_total"`
	FillRate       float64   `json:"fill_rows_per_second,omitempty"`
	FenceMS        int64     `json:"fence_ms,omitempty"`
	RowsDeleted    int64     `json:"rows_deleted,omitempty"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// ReadStatuses reads every reshard recorded on a sink server (none when
// it has no `_readside_reshards`).
func ReadStatuses(ctx context.Context, db *sql.DB) ([]Status, error) {
	rows, err := db.QueryContext(ctx, "SELECT projection, from_generation, to_sink, to_ranges, phase, progress, UNIX_TIMESTAMP(updated_at) FROM `_readside_reshards`")
	var me *driver.MySQLError
	if errors.As(err, &me) && me.Number == 1146 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading _readside_reshards: %w", err)
	}
	defer rows.Close()
	var out []Status
	for rows.Next() {
		var s Status
		var progress []byte
		var updated float64
		if err := rows.Scan(&s.Projection, &s.FromGeneration, &s.ToSink, &s.ToRanges, &s.Phase, &progress, &updated); err != nil {
			return nil, err
		}
		var pr Progress
		if err := json.Unmarshal(progress, &pr); err == nil {
			s.FromSink, s.Fill, s.RowsCopied, s.RowsRead, s.RowsTotal, s.FillRate, s.FenceMS, s.RowsDeleted =
				pr.FromSink, pr.Fill, pr.RowsCopied, pr.RowsRead, pr.RowsTotal, pr.FillRate, pr.FenceMS, pr.RowsDeleted
		}
		s.UpdatedAt = time.UnixMicro(int64(updated * 1e6)).UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}

// Summary is one line for people: phase and how far.
func (s Status) Summary() string {
	line := fmt.Sprintf("%s: %s → %s (%s), phase %s", s.Projection, s.FromSink, s.ToSink, s.ToRanges, s.Phase)
	switch s.Phase {
	case PhaseFilling, PhaseCatchingUp:
		line += fmt.Sprintf(", %d of ~%d rows read, %d copied", s.RowsRead, s.RowsTotal, s.RowsCopied)
	case PhaseDone, PhaseClean:
		line += fmt.Sprintf(", generation %d, fence %d ms", s.FromGeneration+1, s.FenceMS)
	}
	return line + ", updated " + s.UpdatedAt.Format(time.RFC3339)
}
