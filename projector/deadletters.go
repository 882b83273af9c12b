package projector

import (
	"sync"
	"time"
)

// AllDeadLetteredAfter is how many records in a row, with no row applied
// between them, make a dead-lettering projection count as broken: every
// row it receives goes to the dead-letter topic, so its read table no
// longer follows the source although the projector runs. A hundred keeps
// the odd bad row (a batch with a few rejected rows among applied ones)
// from counting, while a projection whose every row fails is reported
// within its first hundred rows.
const AllDeadLetteredAfter = 100

// deadLetterWindow is the span /status reports dead-letter and applied
// counts over (the dead-letter rate).
const deadLetterWindow = time.Minute

// DeadLetterStatus is one projection's dead-lettering as /status shows it.
type DeadLetterStatus struct {
	Total int64 `json:"total"`
	// LastMinute and AppliedLastMinute: records dead-lettered and rows
	// applied over the last minute.
	LastMinute        int64 `json:"last_minute"`
	AppliedLastMinute int64 `json:"applied_last_minute"`
	// Streak: records dead-lettered since the last applied row.
	Streak int64 `json:"streak"`
	// All: Streak reached AllDeadLetteredAfter — every row goes to the
	// dead-letter topic.
	All bool `json:"all_dead_lettered"`
}

// deadLetterTracker counts, per projection, dead-lettered records against
// applied rows. Safe for concurrent use.
type deadLetterTracker struct {
	now func() time.Time
	mu  sync.Mutex
	by  map[string]*deadLetterCounts
}

type deadLetterCounts struct {
	total, streak int64
	// seconds holds per-second counts of the last deadLetterWindow,
	// indexed by Unix second modulo its length.
	seconds [60]struct {
		at            int64
		dead, applied int64
	}
}

func newDeadLetterTracker(now func() time.Time) *deadLetterTracker {
	return &deadLetterTracker{now: now, by: map[string]*deadLetterCounts{}}
}

func (t *deadLetterTracker) counts(name string) *deadLetterCounts {
	c := t.by[name]
	if c == nil {
		c = &deadLetterCounts{}
		t.by[name] = c
	}
	return c
}

func (c *deadLetterCounts) bucket(now time.Time) *struct {
	at            int64
	dead, applied int64
} {
	s := now.Unix()
	b := &c.seconds[s%int64(len(c.seconds))]
	if b.at != s {
		b.at, b.dead, b.applied = s, 0, 0
	}
	return b
}

// deadLettered records n records sent to the dead-letter topic; it
// reports whether the projection now counts as all dead-lettered.
func (t *deadLetterTracker) deadLettered(name string, n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts(name)
	c.total += int64(n)
	c.streak += int64(n)
	c.bucket(t.now()).dead += int64(n)
	return c.streak >= AllDeadLetteredAfter
}

// applied records n rows applied to the read table; any applied row ends
// a streak of dead letters.
func (t *deadLetterTracker) applied(name string, n int) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts(name)
	c.streak = 0
	c.bucket(t.now()).applied += int64(n)
}

func (t *deadLetterTracker) status(name string) DeadLetterStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.by[name]
	if c == nil {
		return DeadLetterStatus{}
	}
	st := DeadLetterStatus{Total: c.total, Streak: c.streak, All: c.streak >= AllDeadLetteredAfter}
	since := t.now().Add(-deadLetterWindow).Unix()
	for _, b := range c.seconds {
		if b.at > since {
			st.LastMinute += b.dead
			st.AppliedLastMinute += b.applied
		}
	}
	return st
}
