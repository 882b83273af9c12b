package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sinkProxy is a TCP proxy between readside's sink connections and
// MariaDB. The bench bed's source and sink are the same server, so a sink
// outage cannot be made by stopping MariaDB (the tailer would stop too):
// the end-to-end step points the sink DSN at this proxy, and cut() makes
// the sink unreachable — every open connection is closed and new ones are
// refused (the listening socket is closed, so a connect gets ECONNREFUSED)
// — until restore() listens again on the same address.
type sinkProxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(target string) (*sinkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	px := &sinkProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	px.serve(ln)
	return px, nil
}

func (px *sinkProxy) serve(ln net.Listener) {
	px.mu.Lock()
	px.ln = ln
	px.mu.Unlock()
	px.wg.Add(1)
	go func() {
		defer px.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by cut or close
			}
			go px.pipe(c)
		}
	}()
}

// pipe copies both ways between a client and a fresh connection to the
// target. Between two TCP connections io.Copy splices in the kernel, so
// the extra hop costs little CPU.
func (px *sinkProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", px.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !px.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	px.mu.Lock()
	delete(px.conns, c)
	delete(px.conns, up)
	px.mu.Unlock()
}

// track registers a connection pair unless the proxy is cut.
func (px *sinkProxy) track(cs ...net.Conn) bool {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ln == nil {
		return false
	}
	for _, c := range cs {
		px.conns[c] = struct{}{}
	}
	return true
}

// cut makes the sink unreachable: no listener, every connection closed.
func (px *sinkProxy) cut() {
	px.mu.Lock()
	ln := px.ln
	px.ln = nil
	for c := range px.conns {
		c.Close()
	}
	px.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	px.wg.Wait()
}

// restore listens again on the same address (retried briefly: the port
// was ours a moment ago, but another process may bind it in between).
func (px *sinkProxy) restore() error {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", px.addr); err == nil {
			px.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restoring the sink proxy on %s: %w", px.addr, err)
}

func (px *sinkProxy) close() { px.cut() }

// proxySink points a config's sink DSN at the proxy (the source DSN keeps
// MariaDB's own address).
func (e *env) proxySink(cfgPath, proxyAddr string) error {
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	direct := e.bed.MySQL.AdminDSN() + e.sinkDB
	proxied := strings.Replace(direct, "tcp("+e.bed.MySQL.Addr()+")", "tcp("+proxyAddr+")", 1)
	old := "dsn: " + strconv.Quote(direct)
	if proxied == direct || !strings.Contains(string(b), old) {
		return fmt.Errorf("cannot point the sink of %s at the proxy: no %q in it", cfgPath, old)
	}
	return os.WriteFile(cfgPath, []byte(strings.Replace(string(b), old, "dsn: "+strconv.Quote(proxied), 1)), 0o600)
}
