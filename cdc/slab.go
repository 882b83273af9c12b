package cdc

import "sync"

// slab hands out the bytes of the tailer's record keys and values from
// shared 64 KiB chunks instead of one allocation each. A narrow insert's
// 585-byte value was allocated with room to spare (its size hint plus 64)
// in the 704-byte size class, and its key in another object: about 15% of
// the bytes the records in flight keep on the heap, which is what a drain's
// peak memory is made of (two Kafka transactions of records). A chunk stays
// alive while any of its records does; records are produced, acknowledged
// and dropped in order, so chunks are let go in order too, at most one part
// used at a time.
//
// The bytes of a kept slice are never written again while its record may
// be read: each is capped at its own length, and the chunk only ever grows
// past it. Records are handed to franz-go, which only reads them. A slab
// with a pool (the stream's) takes its chunks from it and can hand them
// back once every record built in them is acknowledged (seal, recycle):
// a snapshot allocated and cleared a chunk for every ~110 records, 1.1 GB
// for 2M rows, most of the tailer's allocations.
type slab struct {
	chunk []byte
	pool  *sync.Pool // of *[slabChunk]byte; nil: chunks are left to the collector
	taken []*[slabChunk]byte
}

const (
	slabChunk = 64 << 10
	// slabLargest: larger slices get their own allocation, so a chunk is
	// not left mostly unused by one wide row.
	slabLargest = slabChunk / 8
)

// newRecyclingSlab is a slab that takes its chunks from a pool and hands
// them back through seal and recycle.
func newRecyclingSlab() slab { return slab{pool: &sync.Pool{}} }

// room returns an empty slice to append at least n bytes to: the free
// tail of the current chunk, a new chunk, or (n > slabLargest) its own.
func (s *slab) room(n int) []byte {
	if n > slabLargest {
		return make([]byte, 0, n)
	}
	if cap(s.chunk)-len(s.chunk) < n {
		s.chunk = s.newChunk()
	}
	return s.chunk[len(s.chunk):len(s.chunk)]
}

// newChunk is an empty chunk: from the pool when there is one (its old
// bytes are never read: only appended to), else a new one.
func (s *slab) newChunk() []byte {
	if s.pool == nil {
		return make([]byte, 0, slabChunk)
	}
	c, _ := s.pool.Get().(*[slabChunk]byte)
	if c == nil {
		c = new([slabChunk]byte)
	}
	s.taken = keepNewest(s.taken, c, maxTakenChunks)
	return c[:0]
}

// maxTakenChunks bounds the chunks a slab tracks between two seals (the
// producer's buffer, 32 MiB): a commit of kafka.commit_every (20,000)
// narrow records takes ~190, and a snapshot's commit, deferred up to twice
// that (commit_schedule.go), ~360; chunks dropped from tracking are lost
// to the pool and allocated (and cleared) again for the next commit.
// A huge source transaction streams through one Kafka transaction with
// no seal until its end; tracking all of its chunks would keep them alive
// (memory growing with the transaction), so only the newest are: those
// are the records still in the producer's buffer anyway, and the older
// ones are left to the collector once acknowledged. Tracking more than the
// buffer holds would only keep acknowledged records' bytes alive.
const maxTakenChunks = producerBuffer / slabChunk

// keepNewest appends p to list, first dropping the older half when list
// holds max already (cleared, so nothing keeps them alive).
func keepNewest[T any](list []*T, p *T, max int) []*T {
	if len(list) >= max {
		n := copy(list, list[len(list)-max/2:])
		clear(list[n:])
		list = list[:n]
	}
	return append(list, p)
}

// keep takes b, appended to since room returned it, out of the chunk's
// free tail and caps it at its length. A b that outgrew the tail (append
// moved it to a new array) is its own allocation and returned as is.
func (s *slab) keep(b []byte) []byte {
	free := s.chunk[len(s.chunk):cap(s.chunk)]
	if len(b) == 0 || len(free) < len(b) || &free[0] != &b[0] {
		return b
	}
	s.chunk = s.chunk[:len(s.chunk)+len(b)]
	return b[:len(b):len(b)]
}

// seal returns the pool's chunks taken since the last seal, the current
// one included, and starts the next slice in a new chunk: the chunks hold
// only bytes handed out before the call.
func (s *slab) seal() []*[slabChunk]byte {
	taken := s.taken
	s.taken, s.chunk = nil, nil
	return taken
}

// recycle hands sealed chunks back to the pool. Only for chunks whose
// every slice is no longer read by anyone: their bytes are written again.
// Safe from any goroutine.
func (s *slab) recycle(chunks []*[slabChunk]byte) {
	for _, c := range chunks {
		s.pool.Put(c)
	}
}
