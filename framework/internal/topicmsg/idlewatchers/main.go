// Command idlewatchers holds many idle watch streams open against a
// lockstep server, from a process of its own, so that a benchmark can
// measure what each idle watcher costs the server alone. It opens -n
// streams of -path with the session -token, reads each up to its synced
// marker, prints "ready <n>" and keeps them open until its standard input
// closes.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the server's host:port")
	path := flag.String("path", "", "the watch path, /lockstep/<contract>/<version>/watch/<Topic>")
	token := flag.String("token", "", "the session token")
	n := flag.Int("n", 1000, "how many streams to hold")
	parallel := flag.Int("parallel", 32, "how many streams to open at once")
	flag.Parse()
	conns, err := open(*addr, *path, *token, *n, *parallel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "idlewatchers:", err)
		os.Exit(1)
	}
	fmt.Printf("ready %d\n", len(conns))
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
}

// open opens n streams, parallel at a time, each read to its synced
// marker.
func open(addr, path, token string, n, parallel int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				conns[i], errs[i] = watch(addr, path, token)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}

// watch opens one stream and reads it up to the synced marker.
func watch(addr, path, token string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nLockstep-Session: %s\r\n\r\n", path, addr, token); err != nil {
		_ = c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	status, err := br.ReadString('\n')
	if err != nil || !bytes.HasPrefix([]byte(status), []byte("HTTP/1.1 200")) {
		_ = c.Close()
		return nil, fmt.Errorf("watch answered %q: %v", status, err)
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			_ = c.Close()
			return nil, err
		}
		if bytes.HasPrefix(line, []byte(`{"type":"synced"`)) {
			break
		}
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}
