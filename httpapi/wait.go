package httpapi

// /wait?projection=P&gtid=G&timeout=5s: read-your-writes. It answers 200
// once projection P has applied every event of every source transaction
// up to GTID G, 504 when that does not happen within the timeout.
//
// The argument (docs/design/read-your-writes.md, "Read your writes"):
//  1. The tailer commits its checkpoint in the same Kafka transaction as
//     the events it covers. Once a committed checkpoint's GTID set
//     contains G, every event of G and of every transaction before it is
//     committed in P's topics — whether or not G touched P's table at all.
//  2. The end offsets listed after that (the last stable offset, what a
//     read-committed consumer reaches) are past all those events on every
//     partition of P's topics (its own and its joins' parents').
//  3. The projector stores the next offset in the sink transaction that
//     writes the rows. When on every partition the stored offset (lowest
//     over the sink's shards) reaches end-1 (the last entry before the end
//     is the commit marker of the tailer's transaction), every event of G
//     is applied and committed in the read table: a read after the 200
//     sees it.
//  4. Under a background fan-out (fan_out: background) a parent change
//     reaches its other rows after its batch commits: the batch notes
//     the parent in a pending table (the note keeps the time of the
//     oldest change not copied yet) and the copy drops the note. Once no
//     note older than the moment step 3 ended is left on any server,
//     every parent change of step 3's batches is in every row.
// A GTID that touched none of P's rows waits only for P to reach the end
// offsets of step 2, never for an event that will not come.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/internal/sqlquote"
)

// maxWait bounds the timeout a caller may ask for.
const maxWait = 5 * time.Minute

func (c *Collector) serveWait(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, gtid := q.Get("projection"), strings.TrimSpace(q.Get("gtid"))
	timeout := 5 * time.Second
	if s := q.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > maxWait {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("timeout %q: want a Go duration up to %s, e.g. 5s", s, maxWait)})
			return
		}
		timeout = d
	}
	if sink := q.Get("sink"); sink != "" {
		if gtid == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "gtid is required: the GTID of your write (MariaDB: SELECT @@last_gtid; MySQL: the session's gtid_executed after the commit)"})
			return
		}
		c.serveSinkWait(w, r, sink, gtid, timeout)
		return
	}
	var p *Projection
	var names []string
	for i := range c.opts.Projections {
		names = append(names, c.opts.Projections[i].Name)
		if c.opts.Projections[i].Name == name {
			p = &c.opts.Projections[i]
		}
	}
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("projection %q is not declared; declared: %s", name, strings.Join(names, ", "))})
		return
	}
	if gtid == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "gtid is required: the GTID of your write (MariaDB: SELECT @@last_gtid; MySQL: the session's gtid_executed after the commit)"})
		return
	}
	serveWaitFor(w, r, timeout, map[string]any{"projection": p.Name, "gtid": gtid}, func(ctx context.Context) (string, error) {
		return c.Wait(ctx, *p, gtid)
	})
}

// serveWaitFor runs wait within timeout and answers with body and the
// outcome: 200 applied, 504 not within the timeout (naming what it was
// waiting for), 400 for the caller's mistake.
func serveWaitFor(w http.ResponseWriter, r *http.Request, timeout time.Duration, body map[string]any, wait func(context.Context) (string, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	start := time.Now()
	res, err := wait(ctx)
	body["waited_ms"] = time.Since(start).Milliseconds()
	switch {
	case err == nil:
		body["applied"] = true
		writeJSON(w, http.StatusOK, body)
	case ctx.Err() != nil && r.Context().Err() == nil:
		body["applied"], body["error"] = false, fmt.Sprintf("not applied within %s: %s", timeout, res)
		writeJSON(w, http.StatusGatewayTimeout, body)
	default:
		body["applied"], body["error"] = false, err.Error()
		writeJSON(w, http.StatusBadRequest, body)
	}
}

// Wait returns nil once p has applied every event up to gtid; on a
// timeout (ctx) it returns ctx's error and says what it was waiting for.
// Any other error is the caller's (an unparsable GTID). Each step's
// waitingFor carries into the next, so a timeout names the last thing
// seen missing.
func (c *Collector) Wait(ctx context.Context, p Projection, gtid string) (waitingFor string, err error) {
	topics := p.Topics
	if len(topics) == 0 {
		topics = []string{p.Topic}
	}
	// 1: the tailer has committed past gtid.
	if waitingFor, err = c.waitCheckpoint(ctx, gtid); err != nil {
		return waitingFor, err
	}
	// 2: the end offsets now: the high watermark holds gtid's records (they
	// were produced before the transaction committed), but the commit
	// markers are written after EndTxn returns, so the last stable offset
	// may still stop short of them. Wait until it has passed the high
	// watermark seen first; then every record before it is decided.
	var ends kadm.ListedOffsets
	if ends, waitingFor, err = c.waitStableOffsets(ctx, topics, gtid, waitingFor); err != nil {
		return waitingFor, err
	}
	// 3: the applied offsets reach them on every partition and shard.
	if waitingFor, err = c.waitApplied(ctx, p, topics, ends, waitingFor); err != nil {
		return waitingFor, err
	}
	// 4: the background fan-out has copied every parent change applied
	// before now.
	if len(p.FanOutPending) == 0 {
		return "", nil
	}
	return c.waitFanOut(ctx, p, waitingFor)
}

// waitCheckpoint is Wait's step 1: the tailer's checkpoint contains gtid.
func (c *Collector) waitCheckpoint(ctx context.Context, gtid string) (waitingFor string, err error) {
	waitingFor = "the tailer to commit a checkpoint past " + gtid
	for {
		cp, err := c.checkpoint(ctx)
		if err == nil && cp != nil {
			ok, cerr := cp.Position.Contains(cdc.Position{Flavor: cp.Position.Flavor, GTID: gtid})
			if cerr != nil {
				return waitingFor, fmt.Errorf("gtid %q: %v", gtid, cerr)
			}
			if ok {
				return waitingFor, nil
			}
			waitingFor = fmt.Sprintf("the tailer to commit a checkpoint past %s (at %s)", gtid, cp.Position.GTID)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return waitingFor, err
		}
	}
}

// waitStableOffsets is Wait's step 2: it returns the topics' last stable
// offsets once they have passed the high watermarks seen first.
func (c *Collector) waitStableOffsets(ctx context.Context, topics []string, gtid, waitingFor string) (kadm.ListedOffsets, string, error) {
	var hwm kadm.ListedOffsets
	var err error
	for {
		hwm, err = c.adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = hwm.Error()
		}
		if err == nil {
			break
		}
		waitingFor = fmt.Sprintf("the broker to list end offsets: %v", err)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, waitingFor, err
		}
	}
	for {
		ends, err := c.adm.ListCommittedOffsets(ctx, topics...)
		if err == nil {
			err = ends.Error()
		}
		if err == nil && stableBeyond(ends, hwm) {
			return ends, waitingFor, nil
		}
		if err != nil {
			waitingFor = fmt.Sprintf("the broker to list stable offsets: %v", err)
		} else {
			waitingFor = "the broker to write the commit markers of " + gtid
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, waitingFor, err
		}
	}
}

// waitApplied is Wait's step 3: p's applied offsets reach ends on every
// partition and shard.
func (c *Collector) waitApplied(ctx context.Context, p Projection, topics []string, ends kadm.ListedOffsets, waitingFor string) (string, error) {
	for {
		behind, err := c.behind(ctx, p, topics, ends)
		if err == nil && len(behind) == 0 {
			return waitingFor, nil
		}
		if ctx.Err() != nil {
			return waitingFor, ctx.Err()
		}
		if err != nil {
			waitingFor = fmt.Sprintf("the sink's applied offsets: %v", err)
		} else {
			waitingFor = "projection " + p.Name + " to apply up to " + strings.Join(behind, ", ")
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return waitingFor, err
		}
	}
}

// waitFanOut is Wait's step 4: on every server of p's sink, the pending
// fan-out noted before the server's clock now has been copied.
func (c *Collector) waitFanOut(ctx context.Context, p Projection, waitingFor string) (string, error) {
	r, err := c.route(ctx, p)
	if err != nil {
		return "", err
	}
	for _, s := range r.Servers {
		db, err := c.db(s)
		if err != nil {
			return waitingFor, err
		}
		var now string
		for {
			err := db.QueryRowContext(ctx, "SELECT NOW(6)").Scan(&now)
			if err == nil {
				break
			}
			waitingFor = fmt.Sprintf("sink %s to read its clock: %v", s.Name, err)
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return waitingFor, err
			}
		}
		for {
			left, err := pendingBefore(ctx, db, p.FanOutPending, now)
			if err == nil && left == "" {
				break
			}
			if err != nil {
				waitingFor = fmt.Sprintf("the sink's pending fan-out: %v", err)
			} else {
				waitingFor = "projection " + p.Name + " to copy the parents noted in " + left + " before " + now + " into their rows (sink " + s.Name + ")"
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return waitingFor, err
			}
		}
	}
	return "", nil
}

// pendingBefore names the first of tables that holds a note from before
// since ("" when none does; a table not created yet holds none).
func pendingBefore(ctx context.Context, db *sql.DB, tables []string, since string) (string, error) {
	for _, t := range tables {
		var one int
		err := db.QueryRowContext(ctx, "SELECT 1 FROM "+sqlquote.Ident(t)+" WHERE marked_at <= ? LIMIT 1", since).Scan(&one)
		var me *driver.MySQLError
		switch {
		case errors.Is(err, sql.ErrNoRows), errors.As(err, &me) && me.Number == 1146: // ER_NO_SUCH_TABLE
		case err != nil:
			return "", fmt.Errorf("reading %s: %w", t, err)
		default:
			return t, nil
		}
	}
	return "", nil
}

// stableBeyond reports whether every partition's last stable offset has
// reached the high watermark listed before.
func stableBeyond(stable, hwm kadm.ListedOffsets) bool {
	ok := true
	hwm.Each(func(h kadm.ListedOffset) {
		if s, found := stable.Lookup(h.Topic, h.Partition); !found || s.Offset < h.Offset {
			ok = false
		}
	})
	return ok
}

// behind lists the partitions (and shards) whose applied offset is short
// of the end offset less the commit marker.
func (c *Collector) behind(ctx context.Context, p Projection, topics []string, ends kadm.ListedOffsets) ([]string, error) {
	var out []string
	r, err := c.route(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, s := range r.Servers {
		for _, topic := range topics {
			offs, err := c.readOffsets(ctx, s, p.Name, topic)
			if err != nil {
				return nil, fmt.Errorf("sink %s: %w", s.Name, err)
			}
			for part, o := range ends[topic] {
				next, ok := offs[part]
				if !ok {
					next = 0
				}
				if next < o.Offset-1 {
					out = append(out, fmt.Sprintf("%s/%d offset %d (sink %s at %d)", topic, part, o.Offset-1, s.Name, next))
				}
			}
		}
	}
	return out, nil
}

// checkpoint is the tailer's last committed checkpoint: live when it runs
// here, else from the checkpoint topic.
func (c *Collector) checkpoint(ctx context.Context) (*cdc.Checkpoint, error) {
	if c.opts.TailerHere && c.tailer != nil {
		return c.tailer.Status().Checkpoint, nil
	}
	cp, found, err := cdc.ReadCheckpoint(ctx, c.opts.Brokers, c.opts.CheckpointTopic, c.opts.TransactionalID)
	if err != nil || !found {
		return nil, err
	}
	return &cp, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
