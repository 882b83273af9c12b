package shards

import (
	"fmt"
	"io"
	"strings"
)

// Report is one analysis, as `readside shards analyze` prints it (--json:
// this struct).
type Report struct {
	Projection string     `json:"projection"`
	By         string     `json:"by"` // the shard_by column, or --by's expression
	Sink       string     `json:"sink"`
	Sample     SampleInfo `json:"sample"`
	Stats
}

// WriteText prints the report for a terminal: a table per layout, the
// hottest values, the moves.
func (r Report) WriteText(w io.Writer) {
	s := r.Sample
	how := "all rows"
	if !s.All && s.Every > 1 {
		how = fmt.Sprintf("a sample of 1 in %d rows (CRC32 of the primary key; about %d rows in the table): the counts are the sample's, about 1/%d of the table's", s.Every, s.Estimate, s.Every)
	}
	fmt.Fprintf(w, "projection %s, routed by %s: %s\n", r.Projection, r.By, how)
	fmt.Fprintf(w, "%d source rows read, %d read rows counted (%d left out by where, %d with a NULL shard value), %d distinct values, %s\n",
		s.Read, r.Rows, s.Filtered, s.NullKeys, r.Distinct, humanBytes(r.Bytes))
	for _, l := range r.Layouts {
		bound := ""
		if l.SkewBound > 0 {
			bound = fmt.Sprintf(" (±%.1f points: a sample)", 100*l.SkewBound)
		}
		fmt.Fprintf(w, "\n%s (%s): skew %.1f%% of rows%s, %.1f%% of bytes\n", l.Name, l.Ranges, 100*l.Skew, bound, 100*l.BytesSkew)
		fmt.Fprintf(w, "  %-10s %12s %7s %10s\n", "range", "rows", "share", "bytes")
		for _, sh := range l.Shards {
			fmt.Fprintf(w, "  %-10s %12d %6.2f%% %10s\n", sh.Range, sh.Rows, 100*sh.Share, humanBytes(sh.Bytes))
		}
	}
	if len(r.Top) > 0 {
		fmt.Fprintf(w, "\nhottest values of %s:\n", r.By)
		for _, v := range r.Top {
			fmt.Fprintf(w, "  %6.2f%% %12d  %s\n", 100*v.Share, v.Rows, clip(v.Value, 60))
		}
	}
	if m := r.Moves; m != nil {
		fmt.Fprintf(w, "\nresharding %s -> %s moves %d rows (%.1f%%):\n", m.From, m.To, m.Rows, 100*m.Share)
		for _, f := range m.Flows {
			what := "moves"
			if f.From == f.To {
				what = "stays"
			}
			fmt.Fprintf(w, "  %-10s -> %-10s %12d  %s\n", f.From, f.To, f.Rows, what)
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
