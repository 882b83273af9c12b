package cdc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The reader reads and encodes the chunks of the head snapshot task ahead
// of the stream, so that the round trips of a chunk (its table's columns,
// its watermark write, the SELECT), the rows arriving and their encoding
// overlap the stream's wait for the high watermark before it and the
// producing of the chunks before that. The stream publishes chunks in the
// order they were read, each at its own high watermark.
//
// A chunk's range is known before its rows are: a boundary query
// (boundQuery) reads the key of the chunk_rows-th row ahead, and the chunk
// is the rows (after, bound]. So the next chunk's SELECT need not wait for
// this one's rows, only for this one's high watermark: up to
// snapshotReading chunks' rows arrive at once, each on its connection and
// copied by a goroutine of its own. The last range of a table (fewer rows
// left than a chunk) is read with a LIMIT as before, and the chunk after
// it, if any, waits for its rows.
//
// Order is what keeps DBLog's guarantee, one window per chunk: the reader
// announces a chunk (its id) to the stream before writing the watermark
// that opens its window, so the stream knows every watermark it meets; it
// starts a chunk's SELECT only after that watermark is committed, and
// writes the chunk's high watermark only once the SELECT's read view is
// open (its first row is in), so at most one chunk is between its
// watermarks at any point of the binlog and each chunk's read view lies in
// its own window, however many chunks' rows are still arriving; and it
// hands a chunk's rows to the stream (closes read) only after the next
// chunk is announced, so the stream finds it there when it publishes this
// one at its high watermark.

// chunkRead, when set (by tests), is called with the key of a chunk's
// first row once it is read and before the chunk's high watermark is
// written: a change it makes lands between the chunk's watermarks, after
// the chunk's read view.
var chunkRead func(table string, firstKey [][]byte)

// highWrite, when set (by tests), is called right before a chunk's high
// watermark is written: a delay there holds the next chunk's SELECT back.
var highWrite func(table string)

// snapshotReadAhead bounds the chunks read and not yet published (the
// memory of a snapshot: about snapshotReadAhead × chunk_rows encoded rows).
const snapshotReadAhead = 3

// snapshotReading bounds the chunks whose rows arrive at once (one source
// connection each, of the pool's sourceMaxConns).
const snapshotReading = 2

// chunk is one chunk of a snapshot: filled by the reader, then published
// by the stream.
type chunk struct {
	id       string
	task     taskRef
	db, name string // the task's table, known when the chunk is announced
	// opensAtPrev: the chunk's window opens at the previous chunk's high
	// watermark; the task's first chunk writes a low watermark of its own.
	opensAtPrev bool
	table       *table // the reader's until it starts the encoder
	// until is the chunk's last key (boundQuery), nil for the last range
	// of the table, read with a LIMIT.
	until [][]byte

	// The stream's, from the low watermark on.
	lowSeen bool
	dropped map[string]bool // keys a live change touched between the watermarks

	// The reader's until it hands the chunk over: until, or for the last
	// range the last row's key.
	lastKey  [][]byte
	complete bool // the last range held fewer rows than asked: the table is done after this chunk

	// handover is the reader's word, once per chunk whose high watermark
	// it began to write: nil when the next chunk is announced, errNoNext
	// when none will be, or why the chunk failed.
	handover chan error

	// The encoder's until read is closed; the stream's after.
	read   chan struct{}
	keys   [][]byte // encoded keys in primary key order
	afters [][]byte // each row's after image, same order
	err    error    // a row readside cannot encode, or the read failed after the high watermark
}

// taskRef names the task a chunk belongs to.
type taskRef struct {
	id           uint64
	table, where string
}

func refOf(t SnapshotTask) taskRef { return taskRef{t.ID, t.Table, t.Where} }

// chunkReader is the goroutine reading one task's chunks.
type chunkReader struct {
	task   taskRef
	chunks chan *chunk   // announced, in order, before their low watermark
	slots  chan struct{} // one per chunk read and not yet published
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine is over; err is then set
	err    error
	rows   sync.WaitGroup // the goroutines reading chunks' rows
}

// startReader starts reading the head task's chunks when nothing reads
// them, and stops a reader whose task is no longer the head one
// (cancelled, failed or done).
func (s *stream) startReader(ctx context.Context) {
	if s.reader != nil && (len(s.snapshots) == 0 || s.reader.task != refOf(s.snapshots[0])) {
		s.stopReader()
	}
	if s.reader != nil || len(s.snapshots) == 0 {
		return
	}
	task := s.snapshots[0]
	topic, ok := s.captured[task.Table]
	if !ok {
		s.t.log.Warn("snapshot request for a table that is not in source.tables; ignored", "table", task.Table)
		s.snapshots = s.snapshots[1:]
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &chunkReader{task: refOf(task), chunks: make(chan *chunk, snapshotReadAhead), slots: make(chan struct{}, snapshotReadAhead),
		cancel: cancel, done: make(chan struct{})}
	cfg := s.t.cfg.Source
	rd := &chunkReads{src: s.src, task: task, topic: topic, excluded: s.excluded[task.Table], keyCols: s.keys[task.Table],
		signalDB: cfg.Snapshot.SignalDB, serverID: cfg.ServerID, limit: cfg.Snapshot.ChunkRows, free: make(chan *rawRows, snapshotReadAhead+1)}
	go func() {
		defer close(r.done)
		r.err = r.run(rctx, task.After, rd)
	}()
	s.reader = r
}

// run reads chunks from after on until one is the last or ctx ends. The
// first chunk's window opens at a low watermark of its own, each later
// one's at the high watermark of the chunk before: that write already
// lies after the previous read view and before the next, which is all a
// low watermark has to.
func (r *chunkReader) run(ctx context.Context, after [][]byte, rd *chunkReads) error {
	c := r.announce(ctx, false)
	if c == nil {
		return nil
	}
	tbl, err := rd.columns(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	until, err := rd.bound(ctx, tbl, after)
	if err != nil {
		return quiet(ctx, err)
	}
	if err := rd.watermark(ctx, c.id, "low"); err != nil {
		return quiet(ctx, err)
	}
	reading := make(chan struct{}, snapshotReading)
	for {
		select {
		case reading <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		c.until = until
		cr, err := rd.open(ctx, c, tbl, after)
		if err != nil {
			<-reading
			return quiet(ctx, err)
		}
		r.rows.Add(1)
		go func() {
			defer r.rows.Done()
			cr.finish(ctx, reading, r.done)
		}()
		next, err := cr.wait()
		if err != nil {
			c.handover <- err
			return quiet(ctx, err)
		}
		// The next chunk is announced before this one's rows are handed
		// over: the stream, once it has published this chunk at its high
		// watermark, finds the next one there to open its window.
		var nc *chunk
		if !c.complete && next.err == nil {
			nc = r.announce(ctx, true)
		}
		if nc == nil {
			c.handover <- errNoNext
		} else {
			c.handover <- nil
		}
		switch {
		case c.complete:
			return nil
		case next.err != nil:
			return quiet(ctx, next.err)
		case nc == nil:
			return nil // ctx ended
		}
		ranged := c.until != nil
		after, c, tbl, until = c.lastKey, nc, next.tbl, next.until
		if !ranged {
			// The last range came back full (rows inserted after its
			// boundary query found fewer): the table goes on.
			if until, err = rd.bound(ctx, tbl, after); err != nil {
				return quiet(ctx, err)
			}
		}
	}
}

// errNoNext hands a chunk over with no chunk announced after it: the
// reader is over (its task's last chunk, a failure, or a stop) once the
// stream can publish it.
var errNoNext = errors.New("no next chunk")

// announce hands the stream a new chunk once a slot is free: nil when
// ctx ends first.
func (r *chunkReader) announce(ctx context.Context, opensAtPrev bool) *chunk {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	c := &chunk{id: hex.EncodeToString(idb[:]), task: r.task, opensAtPrev: opensAtPrev, dropped: map[string]bool{},
		handover: make(chan error, 1), read: make(chan struct{})}
	c.db, c.name, _ = strings.Cut(r.task.table, ".")
	r.chunks <- c // never blocks: a slot is held
	return c
}

// quiet is err, or nil once ctx ended (the reader was stopped).
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// stopReader ends the reader and forgets its chunks: watermarks met later
// are then of chunks the stream does not know, and ignored.
func (s *stream) stopReader() {
	if s.reader == nil {
		return
	}
	s.reader.cancel()
	<-s.reader.done
	s.reader.rows.Wait()
	s.reader, s.inflight = nil, nil
}

// readerOver is ready when the reader failed: its done channel, or nil
// (never ready) without a reader or when it read its task's last chunk,
// which then waits for the stream to publish it.
func (s *stream) readerOver() <-chan struct{} {
	if s.reader == nil {
		return nil
	}
	select {
	case <-s.reader.done:
		if s.reader.err == nil {
			return nil
		}
	default:
	}
	return s.reader.done
}

// readerFailed takes up a reader that is over: an error of the request
// fails the task (chunkFailed); any other is the stream's, which retries.
// A reader over without an error read the task's last chunk.
func (s *stream) readerFailed(ctx context.Context) error {
	r := s.reader
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	default:
		return nil
	}
	if r.err == nil {
		return nil
	}
	s.stopReader()
	if len(s.snapshots) == 0 || refOf(s.snapshots[0]) != r.task {
		return nil
	}
	return s.chunkFailed(ctx, r.err)
}

// take moves the chunks the reader announced into the stream's list.
func (s *stream) take() {
	if s.reader == nil {
		return
	}
	for {
		select {
		case c := <-s.reader.chunks:
			s.inflight = append(s.inflight, c)
		default:
			return
		}
	}
}

// watermarked is the chunk in flight a watermark row names: the head one,
// or nil for a chunk the stream does not know (one of a stream before a
// restart, or of a reader stopped since). A watermark of a later chunk
// while the head one waits would mean the windows overlap: the stream
// stops rather than publish what it cannot vouch for.
func (s *stream) watermarked(id string) (*chunk, error) {
	s.take()
	for i, c := range s.inflight {
		if c.id != id {
			continue
		}
		if i > 0 {
			return nil, fmt.Errorf("snapshot chunk %s met a watermark before chunk %s was published: the chunks' windows overlap (a bug); the stream restarts from its checkpoint", id, s.inflight[0].id)
		}
		return c, nil
	}
	return nil, nil
}

// popChunk takes the head chunk in flight, waiting for its rows to be
// encoded (read before its high watermark was written, encoded since).
func (s *stream) popChunk(ctx context.Context) (*chunk, error) {
	c := s.inflight[0]
	select {
	case <-c.read:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	s.inflight = s.inflight[1:]
	<-s.reader.slots
	return c, nil
}

// chunkReads is what the reader reads one task's chunks with.
type chunkReads struct {
	src      *sourceDB
	task     SnapshotTask // its After is where the reader started
	topic    string
	excluded map[string]bool
	keyCols  []string
	signalDB string
	serverID uint32
	limit    int
	free     chan *rawRows // buffers of chunks encoded, for the next reads
}

// columns reads the task's table's columns and key.
func (rd *chunkReads) columns(ctx context.Context) (*table, error) {
	db, name, _ := strings.Cut(rd.task.Table, ".")
	return rd.src.schemaTable(ctx, db, name, rd.topic, rd.excluded, rd.keyCols)
}

// bound reads the last key of the chunk after the key after: the
// chunk_rows-th row's, or nil when fewer rows are left (the table's last
// range, read with a LIMIT).
func (rd *chunkReads) bound(ctx context.Context, tbl *table, after [][]byte) ([][]byte, error) {
	t := rd.task
	t.After = after
	query, args := boundQuery(tbl, &t, rd.limit)
	rows, err := rd.src.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.RawBytes, len(tbl.pk))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	key := make([][]byte, len(vals))
	for i, v := range vals {
		key[i] = slices.Clone([]byte(v))
	}
	return key, rows.Err()
}

// sameKey reports whether a and b have the same key columns, in order.
func sameKey(a, b *table) bool {
	if len(a.pk) != len(b.pk) {
		return false
	}
	for i := range a.pk {
		ca, cb := a.columns[a.pk[i]], b.columns[b.pk[i]]
		if ca.name != cb.name || ca.kind != cb.kind || ca.typeName != cb.typeName {
			return false
		}
	}
	return true
}

// nextChunk is what the next chunk is read with (its table's columns and
// the end of its range), or why it cannot be.
type nextChunk struct {
	tbl   *table
	until [][]byte
	err   error
}

// chunkRows is one chunk's SELECT while its rows arrive.
type chunkRows struct {
	c        *chunk
	rows     *sql.Rows
	raw      *rawRows
	vals     []sql.RawBytes
	ptrs     []any
	limit    int
	table    string
	free     chan *rawRows
	high     chan error     // the chunk's high watermark, once committed
	next     chan nextChunk // read once the chunk's read view is open
	rowsRead chan error     // the rows are in (raw holds them), or why not
}

// open starts chunk c's SELECT of the rows after the key after, with the
// columns tbl, and reads its first row. InnoDB opened the statement's read
// view before it returned that row and every row comes from that view, so
// the chunk's high watermark, written from here on in the background,
// lies after the read; the next chunk's columns and range are read
// alongside (after this chunk's read view, before the next one's). A chunk
// whose high watermark is being written gets a handover and its read
// closed whatever happens (finish), as the stream waits for them when it
// meets that watermark.
func (rd *chunkReads) open(ctx context.Context, c *chunk, tbl *table, after [][]byte) (*chunkRows, error) {
	c.table = tbl
	t := rd.task
	t.After = after
	query, args := chunkQuery(tbl, &t, rd.limit, c.until)
	rows, err := rd.src.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	// The rows are copied as they are scanned (vals hold a row only until
	// the next Scan) into the buffer of a chunk encoded before.
	ncol := len(tbl.columns)
	cr := &chunkRows{c: c, rows: rows, vals: make([]sql.RawBytes, ncol), ptrs: make([]any, ncol), limit: rd.limit, table: rd.task.Table,
		free: rd.free, high: make(chan error, 1), next: make(chan nextChunk, 1), rowsRead: make(chan error, 1)}
	for i := range cr.vals {
		cr.ptrs[i] = &cr.vals[i]
	}
	select {
	case cr.raw = <-rd.free:
		cr.raw.reset(ncol)
	default:
		cr.raw = newRawRows(ncol, rd.limit)
	}
	if rows.Next() {
		if err := rows.Scan(cr.ptrs...); err != nil {
			rows.Close()
			return nil, err
		}
		for _, v := range cr.vals {
			cr.raw.add(v)
		}
	} else if err := rows.Err(); err != nil {
		rows.Close()
		return nil, err
	}
	if chunkRead != nil && cr.raw.rows() > 0 {
		var first [][]byte
		for _, i := range tbl.pk {
			first = append(first, slices.Clone(cr.vals[i]))
		}
		chunkRead(rd.task.Table, first)
	}
	go func() {
		if highWrite != nil {
			highWrite(rd.task.Table)
		}
		cr.high <- rd.watermark(ctx, c.id, "high")
	}()
	go func() {
		var n nextChunk
		var bound chan nextChunk
		if c.until != nil {
			// Read with this chunk's key, beside the columns: kept only if
			// the next chunk's key is the same columns (a DDL in between
			// that changed the key leaves the next chunk without a range:
			// it is read with a LIMIT).
			bound = make(chan nextChunk, 1)
			go func() {
				var b nextChunk
				b.until, b.err = rd.bound(ctx, tbl, c.until)
				bound <- b
			}()
		}
		n.tbl, n.err = rd.columns(ctx)
		if bound != nil {
			b := <-bound
			if n.err == nil {
				n.err = b.err
			}
			if n.err == nil && sameKey(tbl, n.tbl) {
				n.until = b.until
			}
		}
		cr.next <- n
	}()
	if c.until != nil {
		c.lastKey = c.until
	}
	return cr, nil
}

// wait returns once the chunk's high watermark is committed, with the
// next chunk's columns and range; for the table's last range (no until),
// once its rows are in too: whether the table is done, and where the next
// chunk starts, is known from them only.
func (cr *chunkRows) wait() (nextChunk, error) {
	n := <-cr.next
	if err := <-cr.high; err != nil {
		return n, err
	}
	if cr.c.until == nil {
		if err := <-cr.rowsRead; err != nil {
			return n, err
		}
	}
	return n, nil
}

// finish reads the rest of the chunk's rows, frees its reading slot,
// waits for the reader's handover, then encodes the rows and closes
// c.read (with c.err when the chunk failed).
func (cr *chunkRows) finish(ctx context.Context, reading <-chan struct{}, over <-chan struct{}) {
	c := cr.c
	err := cr.rest()
	<-reading
	cr.rowsRead <- err
	var herr error
	select {
	case herr = <-c.handover:
	case <-ctx.Done():
		herr = ctx.Err()
	}
	if herr == errNoNext {
		// The stream, having published this chunk, finds the reader over
		// and no next chunk to open.
		<-over
		herr = nil
	}
	if err == nil {
		err = herr
	}
	if err != nil {
		c.err = err
		select {
		case cr.free <- cr.raw:
		default:
		}
		close(c.read)
		return
	}
	c.encode(cr.raw, cr.table, cr.free)
}

// rest reads the rows after the first; for the table's last range, it
// also says whether the table is done and the key the next chunk starts
// after.
func (cr *chunkRows) rest() error {
	for cr.rows.Next() {
		if err := cr.rows.Scan(cr.ptrs...); err != nil {
			cr.rows.Close()
			return err
		}
		for _, v := range cr.vals {
			cr.raw.add(v)
		}
	}
	cr.rows.Close()
	if err := cr.rows.Err(); err != nil {
		return err
	}
	if cr.c.until != nil {
		return nil
	}
	n := cr.raw.rows()
	cr.c.complete = n < cr.limit
	if n > 0 {
		cr.raw.row(n-1, cr.vals)
		for _, i := range cr.c.table.pk {
			cr.c.lastKey = append(cr.c.lastKey, slices.Clone([]byte(cr.vals[i])))
		}
	}
	return nil
}

// encode encodes the chunk's rows (key and after image of each), then
// hands raw's buffer on to a later read (free) and closes c.read.
func (c *chunk) encode(raw *rawRows, table string, free chan<- *rawRows) {
	defer close(c.read)
	defer func() {
		select {
		case free <- raw:
		default:
		}
	}()
	// Keys and images share a few large buffers: one allocation per
	// 64 KiB rather than two per row.
	var buf slab
	n := raw.rows()
	vals := make([]sql.RawBytes, raw.ncol)
	c.keys, c.afters = make([][]byte, 0, n), make([][]byte, 0, n)
	for r := range n {
		raw.row(r, vals)
		key, err := c.table.appendSQLKey(buf.room(64), vals)
		if err != nil {
			c.err = &FatalError{fmt.Errorf("snapshot of %s: %w", table, err)}
			return
		}
		c.keys = append(c.keys, buf.keep(key))
		img, err := c.table.appendSQLRow(buf.room(256), vals)
		if err != nil {
			c.err = &FatalError{fmt.Errorf("snapshot of %s: %w", table, err)}
			return
		}
		c.afters = append(c.afters, buf.keep(img))
	}
}

// watermark writes a watermark row. Its values are a number, the chunk's
// hex id and "low" or "high", spelled out in the statement: one round
// trip, where a statement with parameters is prepared first.
func (rd *chunkReads) watermark(ctx context.Context, id, mark string) error {
	_, err := rd.src.db.ExecContext(ctx, fmt.Sprintf("REPLACE INTO %s.%s (server_id, chunk, mark, at) VALUES (%d, '%s', '%s', NOW(6))",
		quoteIdent(rd.signalDB), watermarkTable, rd.serverID, id, mark))
	if err != nil {
		return fmt.Errorf("writing snapshot %s watermark: %w", mark, err)
	}
	return nil
}

// rawRows are a chunk's values as read, end to end in one buffer: no
// pointer per value for the garbage collector to follow, and the buffer
// serves a later chunk once this one is encoded.
type rawRows struct {
	ncol int
	data []byte
	ends []int // where each value ends in data, row after row; -1-end for a NULL
}

func newRawRows(ncol, rows int) *rawRows {
	return &rawRows{ncol: ncol, data: make([]byte, 0, 64<<10), ends: make([]int, 0, rows*ncol)}
}

// reset empties r for a chunk of ncol columns, keeping its buffers.
func (r *rawRows) reset(ncol int) {
	r.ncol, r.data, r.ends = ncol, r.data[:0], r.ends[:0]
}

// add appends the next value (nil for NULL).
func (r *rawRows) add(v sql.RawBytes) {
	r.data = append(r.data, v...)
	if v == nil {
		r.ends = append(r.ends, -1-len(r.data))
		return
	}
	r.ends = append(r.ends, len(r.data))
}

// rows is the number of rows added.
func (r *rawRows) rows() int { return len(r.ends) / max(r.ncol, 1) }

// row sets vals (ncol long) to row i's values: views of r's buffer, valid
// until r is reset; nil for NULL, empty but not nil for an empty string.
func (r *rawRows) row(i int, vals []sql.RawBytes) {
	at := func(k int) int {
		if e := r.ends[k]; e >= 0 {
			return e
		}
		return -1 - r.ends[k]
	}
	start := 0
	if i > 0 {
		start = at(i*r.ncol - 1)
	}
	for j := range vals {
		k := i*r.ncol + j
		end := at(k)
		if r.ends[k] < 0 {
			vals[j] = nil
		} else {
			vals[j] = r.data[start:end:end] // data is never nil: '' stays ''
		}
		start = end
	}
}
