package cdc

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
// The bytes of a kept slice are never written again: each is capped at its
// own length, and the chunk only ever grows past it. Records are handed to
// franz-go, which only reads them, and are never reused.
type slab struct{ chunk []byte }

const (
	slabChunk = 64 << 10
	// slabLargest: larger slices get their own allocation, so a chunk is
	// not left mostly unused by one wide row.
	slabLargest = slabChunk / 8
)

// room returns an empty slice to append at least n bytes to: the free
// tail of the current chunk, a new chunk, or (n > slabLargest) its own.
func (s *slab) room(n int) []byte {
	if n > slabLargest {
		return make([]byte, 0, n)
	}
	if cap(s.chunk)-len(s.chunk) < n {
		s.chunk = make([]byte, 0, slabChunk)
	}
	return s.chunk[len(s.chunk):len(s.chunk)]
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
