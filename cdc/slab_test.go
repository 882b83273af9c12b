package cdc

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestSlab: slices kept from a slab keep their bytes whatever is appended
// after them, including slices that outgrow the chunk's free tail, and
// large slices never take a chunk.
func TestSlab(t *testing.T) {
	var s slab
	type kept struct{ got, want []byte }
	var all []kept
	for i := range 5000 {
		// Sizes from a byte to past the chunk's free tail and past slabLargest.
		n := 1 + (i*7919)%(slabLargest+2000)
		hint := n / 2 // a hint too small makes append outgrow the room now and then
		want := bytes.Repeat([]byte{byte(i)}, n)
		b := s.keep(append(s.room(hint), want...))
		if len(b) != n {
			t.Fatalf("slice %d: len %d, want %d", i, len(b), n)
		}
		all = append(all, kept{b, want})
	}
	for i, k := range all {
		if !bytes.Equal(k.got, k.want) {
			t.Fatalf("slice %d (%d bytes) was overwritten", i, len(k.want))
		}
	}
	// A kept slice in the chunk is capped: appending to it cannot reach
	// the next one.
	a := s.keep(append(s.room(8), "abc"...))
	b := s.keep(append(s.room(8), "def"...))
	if cap(a) != len(a) {
		t.Fatalf("kept slice has cap %d > len %d", cap(a), len(a))
	}
	_ = append(a, 'X')
	if string(b) != "def" {
		t.Fatalf("appending to a kept slice reached the next: %q", b)
	}
	used := len(s.chunk)
	if big := s.keep(append(s.room(slabLargest+1), make([]byte, slabLargest+1)...)); len(s.chunk) != used || len(big) != slabLargest+1 {
		t.Fatal("a slice over slabLargest took the chunk")
	}
}

// TestSlabSealRecycle: a recycling slab's seal returns every chunk taken
// since the last seal, the current one included, and the next slice
// starts in another chunk, so no chunk handed back holds a slice kept
// after the seal. (That chunks handed back are taken again is sync.Pool's:
// under the race detector it drops some on purpose.)
func TestSlabSealRecycle(t *testing.T) {
	s := newRecyclingSlab()
	var before [][]byte
	for i := range 1000 { // 4 chunks: 327 slices of 200 bytes fill one
		before = append(before, s.keep(append(s.room(200), bytes.Repeat([]byte{byte(i)}, 200)...)))
	}
	sealed := s.seal()
	if len(sealed) != 4 {
		t.Fatalf("seal returned %d chunks, want 4", len(sealed))
	}
	inSealed := func(b []byte) bool {
		for _, c := range sealed {
			if at := uintptrOf(b); at >= uintptrOf(c[:]) && at < uintptrOf(c[:])+slabChunk {
				return true
			}
		}
		return false
	}
	for i, b := range before {
		if !inSealed(b) {
			t.Fatalf("slice %d kept before the seal is in no sealed chunk", i)
		}
	}
	after := s.keep(append(s.room(200), "after the seal"...))
	if inSealed(after) {
		t.Fatal("a slice kept after the seal is in a sealed chunk")
	}
	if len(s.seal()) != 1 {
		t.Fatal("the second seal did not return the one chunk taken since the first")
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestSlabTracksNewestChunks: without a seal (a huge source transaction
// streams through one Kafka transaction) a slab tracks at most
// maxTakenChunks chunks, the newest, so it keeps no more alive than that
// whatever the transaction's size.
func TestSlabTracksNewestChunks(t *testing.T) {
	s := newRecyclingSlab()
	var last []byte
	for range (3*maxTakenChunks + 50) * slabChunk / slabLargest { // past three times the bound, in chunks
		last = s.keep(append(s.room(slabLargest), make([]byte, slabLargest)...))
	}
	if len(s.taken) > maxTakenChunks {
		t.Fatalf("%d chunks tracked, at most %d wanted", len(s.taken), maxTakenChunks)
	}
	if newest := s.taken[len(s.taken)-1]; uintptrOf(last) < uintptrOf(newest[:]) || uintptrOf(last) >= uintptrOf(newest[:])+slabChunk {
		t.Fatal("the newest chunk is not the last one tracked")
	}
	if tail := s.taken[len(s.taken):cap(s.taken)]; len(tail) > 0 && tail[0] != nil {
		t.Fatal("a chunk dropped from tracking is still referenced by the list's array")
	}
}
