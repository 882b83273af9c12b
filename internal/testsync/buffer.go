// Package testsync holds what tests share to read, while a test runs,
// what other goroutines or child processes write.
package testsync

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one side writes (a child process's
// stdout, a logger of a server's goroutines) while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
