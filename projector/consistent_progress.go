package projector

import (
	"sync"
	"sync/atomic"
	"time"
)

// What a transaction-consistent sink's applier is committing right now,
// for /status and `readside status`: its frontier (the sink's committed
// state) stands still for the whole of a long commit — an initial load of
// hundreds of thousands of rows is one — so without this an operator sees
// "nothing committed yet" for minutes with nothing moving.

// CommitProgress is one commit under way.
type CommitProgress struct {
	Started time.Time `json:"started"`
	// GTID is the source position the commit moves the frontier to.
	GTID string `json:"gtid,omitempty"`
	// Records are the records read into the open transaction so far, of
	// about Offsets below the cut (commit markers count there).
	Records int64 `json:"records"`
	Offsets int64 `json:"offsets"`
}

type commitProgress struct {
	started time.Time
	gtid    string
	offsets int64
	records atomic.Int64
}

// commitsUnderWay are this process's commits under way, by sink.
var commitsUnderWay sync.Map // sink name → *commitProgress

// CommitUnderWay is the commit sink's applier in this process is making,
// if any.
func CommitUnderWay(sink string) (CommitProgress, bool) {
	v, ok := commitsUnderWay.Load(sink)
	if !ok {
		return CommitProgress{}, false
	}
	p := v.(*commitProgress)
	return CommitProgress{Started: p.started, GTID: p.gtid, Records: p.records.Load(), Offsets: p.offsets}, true
}

// begin records a commit's start and returns it, to count its records
// and end it.
func beginProgress(sink, gtid string, offsets int64) *commitProgress {
	p := &commitProgress{started: time.Now(), gtid: gtid, offsets: offsets}
	commitsUnderWay.Store(sink, p)
	return p
}

// end removes p, unless a later commit replaced it.
func (p *commitProgress) end(sink string) {
	commitsUnderWay.CompareAndDelete(sink, p)
}
