package verify

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// WriteText prints a report for people.
func (r *Report) WriteText(w io.Writer) {
	verdict := "EQUAL"
	switch {
	case r.Drift() > 0:
		verdict = "DRIFT"
	case r.Behind > 0:
		verdict = "BEHIND"
	}
	fmt.Fprintf(w, "%s: %s (read table %s on sink %s, %d shard(s))\n", r.Projection, verdict, r.Table, r.Sink, r.Shards)
	fmt.Fprintf(w, "  compared %d source rows with %d sink rows in %d chunks (%d differed) in %.1fs\n",
		r.SourceRows, r.SinkRows, r.Chunks, r.ChunksDiffering, r.Seconds)
	if r.Resumed {
		fmt.Fprintln(w, "  resumed from an interrupted run")
	}
	fmt.Fprintf(w, "  missing %d, extra %d, different %d, misplaced %d\n", r.Missing, r.Extra, r.Different, r.Misplaced)
	if len(r.MisplacedByShard) > 0 {
		var parts []string
		for _, sh := range slices.Sorted(maps.Keys(r.MisplacedByShard)) {
			parts = append(parts, fmt.Sprintf("%d on shard %s", r.MisplacedByShard[sh], sh))
		}
		fmt.Fprintf(w, "  misplaced (on a shard whose key range does not hold their keyspace id): %s; `readside verify --repair` moves them\n", strings.Join(parts, ", "))
	}
	if r.Behind > 0 {
		fmt.Fprintf(w, "  %d row(s) differed the same way on every re-check while the projection never caught up with its topics: it is stalled or far behind (see readside status); verify again once it has caught up\n", r.Behind)
	}
	if r.Unsettled > 0 {
		fmt.Fprintf(w, "  %d row(s) kept changing during the re-checks (being written now): not counted as drift\n", r.Unsettled)
	}
	for _, d := range r.Samples {
		fmt.Fprintf(w, "  %-9s %s on shard %s", d.Kind, keyString(d.Key), d.Shard)
		for _, c := range d.Columns {
			fmt.Fprintf(w, "  %s: source %s, sink %s", c.Name, cell(c.Source), cell(c.Sink))
		}
		fmt.Fprintln(w)
	}
	if rp := r.Repair; rp != nil {
		fmt.Fprintf(w, "  repair: %d key(s) re-published, %d parent row(s) and the child rows of %d row(s) in %d snapshot request(s), %d sink row(s) deleted; %d key(s) still differ after %.1fs\n",
			rp.Published, rp.ParentKeys, rp.ChildParents, rp.SnapshotRequests, rp.Deleted, rp.Remaining, rp.Seconds)
		if rp.Rebuilt > 0 || rp.Withdrawn > 0 {
			fmt.Fprintf(w, "  repair: %d group row(s) rebuilt from their contributions; the sink's state of %d source row(s) that no longer exist withdrawn\n", rp.Rebuilt, rp.Withdrawn)
		}
	}
}

func keyString(k map[string]string) string {
	var parts []string
	for n, v := range k {
		parts = append(parts, n+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func cell(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}
