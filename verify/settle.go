package verify

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// suspect is a key that differed when its chunk was compared. Both sides
// take writes while verify runs, so a difference is only drift once it
// survives re-checks made after the projection caught up with what was
// published (docs/design/verification.md, "Verification").
type suspect struct {
	key      Key
	sig      string    // what differed, last time
	stable   int       // consecutive re-checks that saw sig
	since    time.Time // first re-check that saw sig
	caughtUp bool      // a re-check that saw sig followed a caught-up wait
	diffs    []Diff
}

// signature identifies a difference: the same source row against the same
// sink row at the same version.
func signature(ds []Diff) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s|%d|%d|", d.Kind, d.shardIdx, d.sinkVer)
		for _, c := range d.srcRow {
			if c == nil {
				b.WriteString("\x01N")
			} else {
				b.WriteString("\x01" + *c)
			}
		}
		for _, c := range d.Columns {
			if c.Sink == nil {
				b.WriteString("\x02N")
			} else {
				b.WriteString("\x02" + *c.Sink)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func suspectKeys(m map[string]*suspect) []Key {
	out := make([]Key, 0, len(m))
	for _, s := range m {
		out = append(out, s.key)
	}
	return out
}

// settle re-checks suspects until each is equal (dropped), confirmed (the
// same difference seen on three re-checks spanning at least the quiet
// time, one of them after the projection caught up), or Settle runs out.
// Then a suspect whose difference stayed the same while the projection
// never caught up is behind (a projection stalled or far behind: the
// table is not equal, and waiting longer is what tells which), and any
// other is unsettled (the row is being written right now, and the
// projector will rewrite it anyway).
func (v *Verifier) settle(ctx context.Context, suspects map[string]*suspect) (confirmed []Diff, unsettled, behind int, err error) {
	if len(suspects) == 0 {
		return nil, 0, 0, nil
	}
	deadline := time.Now().Add(v.opts.Settle)
	quiet := min(v.opts.Settle/3, 3*time.Second)
	backoff := 200 * time.Millisecond
	for round := 1; ; round++ {
		// Each wait is bounded by the quiet time, not the whole settle
		// time: a projection that never catches up still gets the
		// re-checks that tell a row it left behind from one being
		// written now.
		wait := deadline
		if w := time.Now().Add(quiet); w.Before(wait) {
			wait = w
		}
		caught := v.waitCaughtUp(ctx, wait)
		if ctx.Err() != nil {
			return nil, 0, 0, ctx.Err()
		}
		diffs, err := v.compareKeys(ctx, suspectKeys(suspects))
		if err != nil {
			return nil, 0, 0, err
		}
		// A suspect resumed from a state file has only its key's text.
		byKey := map[string][]Diff{}
		for _, d := range diffs {
			byKey[d.suspectID()] = append(byKey[d.suspectID()], d)
			if t := d.key.text(); t != d.suspectID() {
				byKey[t] = append(byKey[t], d)
			}
		}
		now := time.Now()
		for k, s := range suspects {
			ds := byKey[k]
			if len(ds) == 0 {
				delete(suspects, k)
				continue
			}
			if sig := signature(ds); sig != s.sig {
				s.sig, s.stable, s.since, s.caughtUp = sig, 1, now, caught
			} else {
				s.stable++
				s.caughtUp = s.caughtUp || caught
			}
			s.diffs = ds
			if s.stable >= 3 && s.caughtUp && now.Sub(s.since) >= quiet {
				confirmed = append(confirmed, ds...)
				delete(suspects, k)
			}
		}
		v.opts.Log.Debug("verify: re-check", "projection", v.p.Name, "round", round, "pending", len(suspects), "confirmed", len(confirmed), "caught_up", caught)
		if len(suspects) == 0 {
			break
		}
		if now.After(deadline) {
			for _, s := range suspects {
				settled := s.stable >= 2 && now.Sub(s.since) >= quiet
				switch {
				case settled && s.caughtUp:
					confirmed = append(confirmed, s.diffs...)
				case settled:
					behind++
				default:
					unsettled++
				}
			}
			if behind > 0 {
				v.opts.Log.Warn("verify: rows differed the same way on every re-check while the projection never caught up with its topics", "projection", v.p.Name, "rows", behind, "settle", v.opts.Settle)
			}
			if unsettled > 0 {
				v.opts.Log.Warn("verify: rows still changing when the settle time ran out; not counted as drift", "projection", v.p.Name, "rows", unsettled, "settle", v.opts.Settle)
			}
			break
		}
		select {
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return confirmed, unsettled, behind, nil
}

// waitCaughtUp waits until every shard has applied everything published
// to the projection's topics when it was called (the last stable offset,
// less the commit marker that ends a Kafka transaction), or until the
// deadline. Without Ends it reports true: re-checks then rely on time.
func (v *Verifier) waitCaughtUp(ctx context.Context, deadline time.Time) bool {
	if v.opts.Ends == nil {
		return true
	}
	ends, err := v.opts.Ends(ctx, v.p.Topics()...)
	if err != nil {
		v.opts.Log.Warn("verify: reading the topics' end offsets; re-checking by time only", "err", err)
		return false
	}
	for {
		applied, err := v.sink.Offsets(ctx, v.p)
		if err == nil {
			behind := false
			for topic, parts := range ends {
				for part, end := range parts {
					if end <= 0 {
						continue
					}
					next, ok := applied[topic][part]
					if !ok || next < end-1 {
						behind = true
					}
				}
			}
			if !behind {
				return true
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
