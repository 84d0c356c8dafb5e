package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/protocol"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// attackMetrics: requests to made-up paths without a certificate, each of
// which used to add series to /metrics for good.
func attackMetrics(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	l := w.legit(s, "legit-node")
	l.run()
	anon := w.peer(s, "", "", false)
	var answers tally
	start := time.Now()
	parallel(sz.unauthenticated, 16, func(int) {
		code, b, err := anon.do(http.MethodPost, "/lockstep/"+randomName()+"/"+randomName()+"/"+randomName(), "", []byte(`{}`))
		if err != nil {
			answers.add("error")
			return
		}
		answers.add(codeOf(code, b))
	})
	r := result{name: fmt.Sprintf("%d unauthenticated POST /lockstep/<random>/<random>/<random> (%s)", sz.unauthenticated, time.Since(start).Round(time.Second))}
	r.notes = append(r.notes, "answers: "+answers.String(), "an operator's scrape of "+w.scrape(s, "/metrics"))
	r.notes = append(r.notes, w.legitOutcome(s, "legit-node")...)
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackTopicFill: one kubelet certificate reports a 30 KB status for a
// node of its own making from each of its sessions, then a new
// legitimate node reports.
func attackTopicFill(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	evil := w.peer(s, "kubelet", "evil-filler", false)
	var mu sync.Mutex
	var tokens []string
	stop := keepAlive(evil, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), tokens...) })
	var answers tally
	start := time.Now()
	parallel(sz.topicNodes, 8, func(i int) {
		token, refused := evil.handshake(nsv2.Contract, fmt.Sprintf("evil-%d", i))
		if token == "" {
			answers.add("handshake " + refused)
			return
		}
		mu.Lock()
		tokens = append(tokens, token)
		mu.Unlock()
		body, _ := json.Marshal(nodeStatus(fmt.Sprintf("filler-%05d", i), 30<<10))
		code, b, err := evil.do(http.MethodPost, protocol.CallPath(nsv2.Contract.Name(), nsv2.Contract.Version(), "ReportStatus"), token, body)
		if err != nil {
			answers.add("error")
			return
		}
		answers.add(codeOf(code, b))
	})
	fill := time.Since(start).Round(time.Second)
	l := w.legit(s, "legit-node")
	l.run()
	time.Sleep(2 * time.Second)
	r := result{name: fmt.Sprintf("one kubelet certificate reports %d nodes' 30 KB statuses, one per session (%s)", sz.topicNodes, fill)}
	r.notes = append(r.notes, "the attacker's reports: "+answers.String())
	r.notes = append(r.notes, w.legitOutcome(s, "legit-node")...)
	r.notes = append(r.notes, "an operator's read of "+w.scrape(s, protocol.PathStatus), "an operator's read of the node controller's "+w.scrape(s, "/status"))
	stop()
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// holdWatches opens n watches of PodAssignment as cert over HTTP/2, 256
// per session, each with the selector value sel(i), and keeps those that
// open unread; close ends them.
func holdWatches(w *world, s *server, cert string, n int, sel func(i int) string, answers *tally) (close func()) {
	p := w.peer(s, "kubelet", cert, true)
	var tokens []string
	for i := 0; i*256 < n; i++ {
		token, refused := p.handshake(nsv2.Contract, fmt.Sprintf("%s-%d", cert, i))
		if token == "" {
			answers.add("handshake " + refused)
			continue
		}
		tokens = append(tokens, token)
	}
	stop := keepAlive(p, func() []string { return tokens })
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var bodies []io.Closer
	path := protocol.WatchPath(nsv2.Contract.Name(), nsv2.Contract.Version(), "PodAssignment")
	parallel(n, 32, func(i int) {
		if len(tokens) == 0 {
			return
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path+"?nodeName="+sel(i), nil)
		req.Header.Set(protocol.HeaderSession, tokens[(i/256)%len(tokens)])
		resp, err := p.hc.Do(req)
		if err != nil {
			answers.add("error")
			return
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			answers.add(codeOf(resp.StatusCode, b))
			return
		}
		answers.add("200")
		mu.Lock()
		bodies = append(bodies, resp.Body)
		mu.Unlock()
	})
	return func() {
		cancel()
		for _, b := range bodies {
			b.Close()
		}
		stop()
		p.hc.CloseIdleConnections()
	}
}

// attackWatchSlots: a few kubelet certificates take PodAssignment's watch
// slots over HTTP/2; then the legitimate kubelet watches its own pods.
func attackWatchSlots(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	l := w.legit(s, "legit-node")
	l.run()
	var answers tally
	start := time.Now()
	var closers []func()
	for c := range sz.watchCerts {
		cert := fmt.Sprintf("evil-watch-%d", c)
		closers = append(closers, holdWatches(w, s, cert, sz.watchesPerCert, func(i int) string { return fmt.Sprintf("%s-%d", cert, i) }, &answers))
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	r := result{name: fmt.Sprintf("%d kubelet certificates open %d PodAssignment watches each over HTTP/2 (%s)", sz.watchCerts, sz.watchesPerCert, took)}
	r.notes = append(r.notes, "the attackers' watches: "+answers.String())
	r.notes = append(r.notes, w.legitOutcome(s, "legit-node")...)
	for _, c := range closers {
		c()
	}
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackSquat: a kubelet certificate reports the legitimate kubelet's node
// NotReady before it comes, and heartbeats; then the node's own kubelet
// reports it.
func attackSquat(w *world, _ sizes) result {
	s := w.start(0)
	defer s.kill()
	evil := w.peer(s, "kubelet", "evil-squatter", false)
	token, refused := evil.handshake(nsv2.Contract, "squatter")
	r := result{name: "a kubelet certificate reports another node (legit-node) NotReady first, and heartbeats"}
	if token == "" {
		r.notes = append(r.notes, "squatter's handshake: "+refused)
		return r
	}
	stop := keepAlive(evil, func() []string { return []string{token} })
	st := nodeStatus("legit-node", 0)
	st.Conditions.Ready.Status = nsv2.ConditionStatusFalse
	body, _ := json.Marshal(st)
	code, b, _ := evil.do(http.MethodPost, protocol.CallPath(nsv2.Contract.Name(), nsv2.Contract.Version(), "ReportStatus"), token, body)
	r.notes = append(r.notes, "the squatter's report: "+codeOf(code, b))
	l := w.legit(s, "legit-node")
	l.run()
	time.Sleep(3 * time.Second)
	r.notes = append(r.notes, w.legitOutcome(s, "legit-node")...)
	stop()
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackSelectors: watchers with 60 KB selector values, then an
// operator's status read.
func attackSelectors(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	l := w.legit(s, "legit-node")
	l.run()
	var answers tally
	big := strings.Repeat("x", 60<<10)
	closeWatches := holdWatches(w, s, "evil-selector", sz.selWatchers, func(i int) string { return fmt.Sprintf("%s%d", big, i) }, &answers)
	r := result{name: fmt.Sprintf("%d watchers with 60 KB selector values, then an operator reads the status", sz.selWatchers)}
	r.notes = append(r.notes, "the attacker's watches: "+answers.String())
	r.notes = append(r.notes, w.legitOutcome(s, "legit-node")...)
	r.notes = append(r.notes, "an operator's read of "+w.scrape(s, protocol.PathStatus))
	closeWatches()
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackSlowBodies: connections that send a request head and one byte of
// a 4,000-byte body, then nothing; how many are still open once the body
// deadline (10 s) is long past.
func attackSlowBodies(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	l := w.legit(s, "legit-node")
	l.run()
	cfg := w.tls("kubelet", "evil-slow")
	cfg.NextProtos = []string{"http/1.1"}
	conns := make([]net.Conn, sz.slowBodies)
	var answers tally
	parallel(sz.slowBodies, 16, func(i int) {
		c, err := tls.Dial("tcp", s.addr, cfg)
		if err != nil {
			answers.add("dial error")
			return
		}
		if _, err := io.WriteString(c, "POST "+protocol.PathHandshake+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"); err != nil {
			answers.add("write error")
		}
		conns[i] = c
	})
	// The legitimate kubelet's node and watch while the bodies stall (the
	// server ends them after its 10 s body timeout).
	held := time.Now()
	outcome := w.legitOutcome(s, "legit-node")
	time.Sleep(sz.slowWait - time.Since(held))
	open := 0
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				mu.Lock()
				open++
				mu.Unlock()
			}
			c.Close()
		}()
	}
	wg.Wait()
	r := result{name: fmt.Sprintf("%d connections trickle one byte of a body, then stall", sz.slowBodies)}
	r.notes = append(r.notes, fmt.Sprintf("still open after %s: %d of %d %s", sz.slowWait, open, sz.slowBodies, answers.String()))
	r.notes = append(r.notes, outcome...)
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackH2Streams: HTTP/2 connections, each with many hellos whose bodies
// never come, from one kubelet certificate.
func attackH2Streams(w *world, sz sizes) result {
	s := w.start(0)
	defer s.kill()
	l := w.legit(s, "legit-node")
	l.run()
	cfg := w.tls("kubelet", "evil-h2")
	var answers tally
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	var writers []*io.PipeWriter
	var mu sync.Mutex
	for range sz.h2Conns {
		tr := &http.Transport{TLSClientConfig: cfg.Clone(), ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
		hc := &http.Client{Transport: tr}
		for range sz.h2Streams {
			pr, pw := io.Pipe()
			mu.Lock()
			writers = append(writers, pw)
			mu.Unlock()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+protocol.PathHandshake, pr)
			req.ContentLength = 4000
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Do(req)
				if err != nil {
					answers.add("ended: " + strings.TrimPrefix(fmt.Sprintf("%T", err), "*"))
					return
				}
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				answers.add(codeOf(resp.StatusCode, b))
			}()
		}
		defer tr.CloseIdleConnections()
	}
	// The legitimate kubelet's node and watch while the streams are held
	// (the server ends them after its 10 s body timeout).
	held := time.Now()
	time.Sleep(2 * time.Second)
	outcome := w.legitOutcome(s, "legit-node")
	time.Sleep(12*time.Second - time.Since(held))
	rss := s.peak.Load()
	cancel()
	for _, pw := range writers {
		pw.Close()
	}
	wg.Wait()
	r := result{name: fmt.Sprintf("%d HTTP/2 connections × %d hellos whose bodies never come, one kubelet certificate", sz.h2Conns, sz.h2Streams)}
	r.notes = append(r.notes, fmt.Sprintf("peak RSS while held %d MiB; answers: %s", rss>>20, answers.String()))
	r.notes = append(r.notes, outcome...)
	l.finish(&r)
	r.rss = s.peak.Load()
	return r
}

// attackConnReserve: a node controller with a small descriptor limit;
// two attacking hosts (127.0.0.2, 127.0.0.3) open all the connections
// they are let, then a kubelet on 127.0.0.4 opens new ones.
func attackConnReserve(w *world, sz sizes) result {
	s := w.start(sz.fdLimit)
	defer s.kill()
	reported := w.reportOnce(s, "legit-node")
	var held []net.Conn
	var answers tally
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		for range sz.fdLimit {
			c, err := d.Dial("tcp", s.addr)
			if err != nil {
				answers.add(src + " dial error")
				continue
			}
			held = append(held, c)
		}
	}
	time.Sleep(time.Second)
	// The server closes a refused connection as it accepts it: a read
	// then ends at once.
	kept := map[string]int{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				mu.Lock()
				kept[strings.Split(c.LocalAddr().String(), ":")[0]]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cfg := w.tls("kubelet", "legit-node")
	cfg.NextProtos = []string{"http/1.1"}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.4")}, Timeout: 5 * time.Second}
	served := 0
	const tries = 160
	var legitConns []net.Conn
	var took []time.Duration
	for range tries {
		start := time.Now()
		c, err := tls.DialWithDialer(&d, "tcp", s.addr, cfg)
		if err != nil {
			continue
		}
		legitConns = append(legitConns, c)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			continue
		}
		b := make([]byte, 12)
		if _, err := io.ReadFull(c, b); err == nil && strings.HasPrefix(string(b), "HTTP/1.1 200") {
			served++
			took = append(took, time.Since(start))
		}
	}
	for _, c := range legitConns {
		c.Close()
	}
	// The node reported before the attack, and the kubelet's watch, while
	// the attackers still hold their connections.
	outcome := append(reported, w.legitOutcome(s, "legit-node")...)
	for _, c := range held {
		c.Close()
	}
	r := result{name: fmt.Sprintf("descriptor limit %d: two attacking hosts hold connections, a kubelet on a third opens %d new ones", sz.fdLimit, tries)}
	r.notes = append(r.notes, fmt.Sprintf("connections the attackers keep: %v %s; the kubelet's connections served: %d of %d", kept, answers.String(), served, tries))
	r.notes = append(r.notes, outcome...)
	connResult(&r, tries, took)
	r.rss = s.peak.Load()
	return r
}

// attackIdentityConns: one kubelet certificate dials from four addresses
// (127.0.0.2–5, four hosts as far as a source bound can tell), each
// connection asking /healthz and then held; then a legitimate kubelet on
// 127.0.0.9 opens new connections. The node controller runs at a
// descriptor limit of sz.idFdLimit, so that the bounds are reached with
// hundreds of TLS handshakes, not tens of thousands.
func attackIdentityConns(w *world, sz sizes) result {
	s := w.start(sz.idFdLimit)
	defer s.kill()
	reported := w.reportOnce(s, "legit-node")
	// ask opens a TLS connection from src as cfg and asks for /healthz; it
	// returns the connection and the answer's status ("" when there was
	// none).
	ask := func(cfg *tls.Config, src string) (net.Conn, string) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(&d, "tcp", s.addr, cfg)
		if err != nil {
			return nil, ""
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return c, ""
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return c, ""
		}
		resp.Body.Close()
		_ = c.SetDeadline(time.Time{})
		return c, strconv.Itoa(resp.StatusCode)
	}
	evil := w.tls("kubelet", "evil-conns")
	evil.NextProtos = []string{"http/1.1"}
	var held []net.Conn
	var answers tally
	for i := range 4 * sz.idConns {
		c, status := ask(evil, fmt.Sprintf("127.0.0.%d", 2+i%4))
		if c != nil {
			held = append(held, c)
		}
		answers.add("HTTP " + status)
	}
	good := w.tls("kubelet", "legit-node")
	good.NextProtos = []string{"http/1.1"}
	served := 0
	const tries = 160
	var took []time.Duration
	var goodConns []net.Conn
	for range tries {
		start := time.Now()
		c, status := ask(good, "127.0.0.9")
		if c != nil {
			goodConns = append(goodConns, c)
		}
		if status == "200" {
			served++
			took = append(took, time.Since(start))
		}
	}
	for _, c := range goodConns {
		c.Close()
	}
	// The node reported before the attack, and the kubelet's watch, while
	// the attacker still holds its connections.
	outcome := append(reported, w.legitOutcome(s, "legit-node")...)
	for _, c := range held {
		c.Close()
	}
	r := result{name: fmt.Sprintf("descriptor limit %d: one kubelet certificate holds connections from four addresses (%d each), a kubelet on a fifth opens %d new ones", sz.idFdLimit, sz.idConns, tries)}
	r.notes = append(r.notes, fmt.Sprintf("the attacker's connections: %s; the kubelet's connections served: %d of %d", answers.String(), served, tries))
	r.notes = append(r.notes, outcome...)
	connResult(&r, tries, took)
	r.rss = s.peak.Load()
	return r
}

// connResult reports a legitimate kubelet's new connections as its calls:
// each a dial, a TLS handshake and a GET /healthz; one not served is an
// error; the p99 is of those served.
func connResult(r *result, tries int, took []time.Duration) {
	slices.Sort(took)
	r.calls, r.errs = tries, tries-len(took)
	if len(took) > 0 {
		r.p99 = took[len(took)*99/100]
	}
	if r.errs > 0 {
		r.firstErr = "a new connection closed as accepted, or refused"
	}
}
