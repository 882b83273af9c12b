package main

import (
	"net"
	"testing"
	"time"
)

// A real envelope names commit_us twice: in the after image (the value)
// and in the schema member (its type). The probe must read the first.
func TestAckProbeParsesTheAfterImage(t *testing.T) {
	key := []byte(`{"id":50011}`)
	value := []byte(`{"op":"c","version":1,"key":{"id":50011},"before":null,"after":{"id":50011,"k":161,"commit_us":1795326104532620},` +
		`"source":{"ts_sec":1},"schema":{"version":"x","columns":{"id":"bigint","commit_us":"bigint"}}}`)
	id, ok := jsonInt(key, idKey)
	if !ok || id != 50011 {
		t.Fatalf("id = %d, %v", id, ok)
	}
	cus, ok := commitUS(value)
	if !ok || cus != 1795326104532620 {
		t.Fatalf("commit_us = %d, %v", cus, ok)
	}
	if _, ok := commitUS([]byte(`{"op":"d","after":null,"schema":{"columns":{"commit_us":"bigint"}}}`)); ok {
		t.Fatal("a delete has no commit_us to read")
	}
}

func TestPercentiles(t *testing.T) {
	var us []int64
	for i := range 100 {
		us = append(us, int64(100-i)*1000) // 100 ms … 1 ms, unsorted
	}
	p := percentilesOf(us)
	if p.P50ms != 51 || p.P99ms != 100 || p.Maxms != 100 || p.N != 100 {
		t.Fatalf("%+v", p)
	}
}

// The proxy passes bytes both ways, cut() closes open connections and
// refuses new ones, restore() accepts again on the same address.
func TestSinkProxyCutAndRestore(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { // echo
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						c.Close()
						return
					}
					_, _ = c.Write(buf[:n])
				}
			}()
		}
	}()
	px, err := startProxy(up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.close()
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 4)
		_, err := c.Read(buf)
		if err == nil && string(buf) != "ping" {
			t.Fatalf("echo %q", buf)
		}
		return err
	}
	c, err := net.Dial("tcp", px.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(c); err != nil {
		t.Fatal(err)
	}
	px.cut()
	if err := echo(c); err == nil {
		t.Fatal("a connection open before the cut still works")
	}
	if c2, err := net.Dial("tcp", px.addr); err == nil {
		c2.Close()
		t.Fatal("the proxy accepted a connection while cut")
	}
	if err := px.restore(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", px.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := echo(c3); err != nil {
		t.Fatal(err)
	}
}
