package cdc

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordSlices hands out the slices a snapshot chunk's records are built
// in (one slice a chunk: 10,000 records are 1.4 MB) and takes them back
// once the Kafka transaction that carried them committed, when franz-go
// has called every record's promise and holds none of them (see seal and
// recycle; the slab's chunks go the same way). A snapshot of 2M rows
// allocated 252 MB of them otherwise.
type recordSlices struct {
	pool  *sync.Pool // of *[]kgo.Record; nil: slices are left to the collector
	taken []*[]kgo.Record
}

func newRecordSlices() recordSlices { return recordSlices{pool: &sync.Pool{}} }

// get returns an empty slice with room for n records. Every record is
// written whole when appended, so nothing of a slice's past use shows.
func (r *recordSlices) get(n int) []kgo.Record {
	if r.pool == nil {
		return make([]kgo.Record, 0, n)
	}
	p, _ := r.pool.Get().(*[]kgo.Record)
	if p == nil || cap(*p) < n {
		s := make([]kgo.Record, 0, n)
		p = &s
	}
	r.taken = keepNewest(r.taken, p, maxTakenRecordSlices)
	return (*p)[:0]
}

// maxTakenRecordSlices bounds the slices tracked between two seals (as
// maxTakenChunks does the slab's): a commit of 20,000 records spans two or
// three chunks of 10,000.
const maxTakenRecordSlices = 8

// seal returns the slices handed out since the last seal.
func (r *recordSlices) seal() []*[]kgo.Record {
	taken := r.taken
	r.taken = nil
	return taken
}

// recycle hands sealed slices back for reuse. Only for slices whose
// records nobody reads any more. Safe from any goroutine.
func (r *recordSlices) recycle(slices []*[]kgo.Record) {
	for _, p := range slices {
		r.pool.Put(p)
	}
}
