package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// The benchmarks below measure the runtime over real loopback TCP, client
// and server in one process, on the benchmark contract's NodeStatus→Ack
// (docs/benchmarks.md has the method and the figures). They run only with
// -bench.

// benchNodes are the requests every variant sends, built once so that
// building them is not measured: call i sends benchNodes[i%len].
var benchNodes = func() []*benchmsg.NodeStatus {
	nodes := make([]*benchmsg.NodeStatus, 64)
	for i := range nodes {
		nodes[i] = benchmsg.Node(i)
	}
	return nodes
}()

// benchServerConfig is the nodecontroller of every lockstep benchmark.
func benchServerConfig() framework.ServerConfig {
	return framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: frameworktest.Quiet()}
}

// registerBenchHandlers registers ReportStatus (answering an Ack with a
// rising generation) and ReportStatuses on s, for requests of type Req.
func registerBenchHandlers[Req any](s *framework.Server, c *framework.Contract) {
	var generation atomic.Int64
	ack := func(_ context.Context, _ *Req) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true, Generation: generation.Add(1)}, nil
	}
	framework.HandleUnary(s, c, "ReportStatus", ack)
	framework.HandleBatch(s, c, "ReportStatuses", ack)
}

// unvalidatedNodeStatus is NodeStatus with a [framework.Validator] that
// accepts everything, so the server skips jsonschema/v5: the diagnostic
// variants use it to show what the runtime costs apart from validation (a
// generated validator's cost comes on top). Embedding keeps the JSON
// identical.
type unvalidatedNodeStatus struct {
	benchmsg.NodeStatus
}

// Validate accepts every message.
func (*unvalidatedNodeStatus) Validate() error { return nil }

var unvalidatedNodes = func() []*unvalidatedNodeStatus {
	nodes := make([]*unvalidatedNodeStatus, len(benchNodes))
	for i, n := range benchNodes {
		nodes[i] = &unvalidatedNodeStatus{NodeStatus: *n}
	}
	return nodes
}()

// startBenchServer starts a lockstep nodecontroller on a random loopback
// port, stopped when the benchmark ends.
func startBenchServer[Req any](b *testing.B, cfg framework.ServerConfig) *frameworktest.Running {
	b.Helper()
	c := benchContract(b, "1.0.0")
	return frameworktest.StartServer(b, cfg, func(s *framework.Server) { registerBenchHandlers[Req](s, c) })
}

// startBenchClient starts a ready kubelet of the server at url, closed when
// the benchmark ends.
func startBenchClient(b *testing.B, url string, autoBatch *framework.AutoBatch) *framework.Client {
	b.Helper()
	cl := frameworktest.NewClient(b, benchContract(b, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.31.0", Endpoints: []string{url}, AutoBatch: autoBatch})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	return cl
}

// lockstepCall makes one ReportStatus call.
func lockstepCall(ctx context.Context, cl *framework.Client, n int) error {
	return checkAck(framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, cl, "ReportStatus", benchNodes[n%len(benchNodes)]))
}

// unvalidatedCall makes one ReportStatus call of the same bytes to a server
// that does not validate them.
func unvalidatedCall(ctx context.Context, cl *framework.Client, n int) error {
	return checkAck(framework.CallUnary[unvalidatedNodeStatus, benchmsg.Ack](ctx, cl, "ReportStatus", unvalidatedNodes[n%len(unvalidatedNodes)]))
}

func checkAck(ack *benchmsg.Ack, err error) error {
	if err == nil && !ack.Accepted {
		err = errors.New("ack not accepted")
	}
	return err
}

// anchor is the stand-in for gRPC in P1 and P2 (docs/benchmarks.md): a
// plain net/http HTTP/1.1 server whose handler decodes NodeStatus with
// encoding/json and answers an Ack, and an http.Client that keeps enough
// idle connections for 64 callers.
type anchor struct {
	url    string
	client *http.Client
	tr     *http.Transport
	srv    *http.Server
	done   chan struct{}
}

func startAnchor(b *testing.B) *anchor {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var generation atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nodestatus", func(w http.ResponseWriter, r *http.Request) {
		var n benchmsg.NodeStatus
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(benchmsg.Ack{Accepted: true, Generation: generation.Add(1)})
	})
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	a := &anchor{
		url:    "http://" + l.Addr().String() + "/nodestatus",
		client: &http.Client{Transport: tr},
		tr:     tr,
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second},
		done:   make(chan struct{}),
	}
	go func() {
		defer close(a.done)
		_ = a.srv.Serve(l)
	}()
	b.Cleanup(func() {
		a.tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.srv.Shutdown(ctx)
		<-a.done
	})
	return a
}

// call makes one NodeStatus→Ack call the way a plain net/http client does.
func (a *anchor) call(ctx context.Context, n int) error {
	body, err := json.Marshal(benchNodes[n%len(benchNodes)])
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	var ack benchmsg.Ack
	if err := json.NewDecoder(resp.Body).Decode(&ack); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the trailing newline, so the connection is reused
	if !ack.Accepted {
		return errors.New("ack not accepted")
	}
	return nil
}

// runUnary measures b.N calls over callers goroutines and reports calls/s,
// p50 and p99 latency and process CPU per call. The pool is warmed first
// with a few calls per caller, so every variant starts with its
// connections open.
func runUnary(b *testing.B, callers int, call func(i int) error) {
	b.Helper()
	if r := benchrun.Run(4*callers, callers, call); r.Err() != nil {
		b.Fatalf("warm-up: %v", r.Err())
	}
	b.ReportAllocs()
	b.ResetTimer()
	r := benchrun.Run(b.N, callers, call)
	b.StopTimer()
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PerSecond(), "calls/s")
	b.ReportMetric(float64(r.Percentile(0.5))/1e3, "p50-µs")
	b.ReportMetric(float64(r.Percentile(0.99))/1e3, "p99-µs")
	b.ReportMetric(float64(r.CPUPerCall())/1e3, "cpu-µs/call")
}

// BenchmarkUnary compares a unary NodeStatus→Ack call between lockstep
// peers and the net/http + encoding/json anchor, at 1 and 64 callers:
//
//   - lockstep: the default client, which batches concurrent calls that
//     find its request slots busy; the server validates every request
//     with jsonschema/v5, because the hand-written types implement no
//     [framework.Validator];
//   - lockstep-nobatch: the same with automatic batching off
//     (AutoBatch.Disabled), every call in a request of its own;
//   - lockstep-novalidate and lockstep-nobatch-novalidate: diagnostics,
//     the same bytes to a server whose request type validates as a no-op,
//     to show what the runtime costs apart from validation;
//   - nethttp: the anchor.
//
// Within one run the variants alternate at each caller count; repeat whole
// runs (not -count, which repeats each variant back to back) for medians.
func BenchmarkUnary(b *testing.B) {
	validated := startBenchServer[benchmsg.NodeStatus](b, benchServerConfig())
	unvalidated := startBenchServer[unvalidatedNodeStatus](b, benchServerConfig())
	off := &framework.AutoBatch{Disabled: true}
	plain := startBenchClient(b, validated.URL, nil)
	unbatched := startBenchClient(b, validated.URL, off)
	plainNV := startBenchClient(b, unvalidated.URL, nil)
	unbatchedNV := startBenchClient(b, unvalidated.URL, off)
	a := startAnchor(b)
	bg := context.Background()
	variants := []struct {
		name string
		call func(i int) error
	}{
		{"lockstep", func(i int) error { return lockstepCall(bg, plain, i) }},
		{"lockstep-nobatch", func(i int) error { return lockstepCall(bg, unbatched, i) }},
		{"lockstep-novalidate", func(i int) error { return unvalidatedCall(bg, plainNV, i) }},
		{"lockstep-nobatch-novalidate", func(i int) error { return unvalidatedCall(bg, unbatchedNV, i) }},
		{"nethttp", func(i int) error { return a.call(bg, i) }},
	}
	for _, callers := range []int{1, 64} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/callers=%d", v.name, callers), func(b *testing.B) { runUnary(b, callers, v.call) })
		}
	}
}

// BenchmarkHandshake measures one handshake.
//
//   - post: POST /lockstep/handshake with a hello over a keep-alive
//     connection and the welcome decoded and checked, as a client's endpoint
//     does it when it re-handshakes. One client instance re-handshakes, so
//     each welcome replaces the previous session and the table stays at one.
//   - client: a new [framework.Client] with its own transport until it is
//     ready: a TCP connection, the handshake, and the client's setup.
//     Closing it (which deletes the session) is not timed.
func BenchmarkHandshake(b *testing.B) {
	srv := startBenchServer[benchmsg.NodeStatus](b, benchServerConfig())
	c := benchContract(b, "1.0.0")
	b.Run("post", func(b *testing.B) {
		tr := framework.NewTransport(nil)
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		offers := []handshake.Offer{c.Offer()}
		url := srv.URL + protocol.PathHandshake
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: "kubelet",
				Instance: "bench-kubelet", Release: "1.31.0", Offers: offers})
			if err != nil {
				b.Fatal(err)
			}
			resp, err := hc.Post(url, "application/json", bytes.NewReader(hello))
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("handshake: HTTP %d %s %v", resp.StatusCode, body, err)
			}
			var w handshake.Welcome
			if err := json.Unmarshal(body, &w); err != nil {
				b.Fatal(err)
			}
			if r := handshake.CheckWelcome(c.Name(), "kubelet", offers, "", w); r != nil {
				b.Fatal(r)
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			cl, err := framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Endpoints: []string{srv.URL}, Logger: frameworktest.Quiet()})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = cl.WaitReady(ctx)
			cancel()
			b.StopTimer()
			_ = cl.Close()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// replaceableServer is a lockstep nodecontroller that can be stopped and
// started again at the same address.
type replaceableServer struct {
	srv  *framework.Server
	done chan error
}

// listenBenchServer builds a nodecontroller, listens on addr (retrying
// briefly while the address is still held) and serves. accepting is the
// moment the listener took the address: from then on the kernel accepts
// connections for it.
func listenBenchServer(b testing.TB, addr string, cfg framework.ServerConfig) (rs *replaceableServer, l net.Listener, accepting time.Time, err error) {
	srv, err := framework.NewServer(cfg)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	c, err := cachedBenchContract()
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	registerBenchHandlers[benchmsg.NodeStatus](srv, c)
	if !assert.Eventually(b, func() bool { l, err = net.Listen("tcp", addr); return err == nil }, 5*time.Second, time.Millisecond) {
		return nil, nil, time.Time{}, err
	}
	accepting = time.Now()
	rs = &replaceableServer{srv: srv, done: make(chan error, 1)}
	go func() { rs.done <- srv.Serve(l) }()
	return rs, l, accepting, nil
}

// cachedBenchContract returns the benchmark contract at 1.0.0, compiled
// once for every benchmark that starts servers off the benchmark goroutine.
var cachedBenchContract = sync.OnceValues(func() (*framework.Contract, error) {
	return framework.NewContract(benchmsg.Contract("1.0.0"))
})

// stop drains (or, with kill, closes) the server and waits for Serve to
// return.
func (rs *replaceableServer) stop(kill bool) error {
	var err error
	if kill {
		err = rs.srv.Close()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = rs.srv.Shutdown(ctx)
		cancel()
	}
	select {
	case serveErr := <-rs.done:
		return errors.Join(err, serveErr)
	case <-time.After(10 * time.Second):
		return errors.New("server did not stop within 10s")
	}
}

// BenchmarkReconnectGap measures P6: the old server stops (drained, or
// killed as a crash would), a client call is made once the client knows and
// blocks, the address stays dark for a while, then a compatible server
// starts listening there. The gap is from the moment its listener accepts to
// the blocked call's completion; session-p50/p99 time its first part, until
// the new server opened the client's session. Only the gap is timed (ns/op
// is the mean gap); p50 and p99 are over the iterations, so run it with
// -benchtime=100x or so.
//
// down=0 replaces the server at once; down=1s leaves the address dark long
// enough for the client's reconnect backoff to reach its cap, as in an
// upgrade where the new binary takes a moment to start. The backoff-max=20ms
// case shows how much of the gap is the default backoff's 100ms cap.
func BenchmarkReconnectGap(b *testing.B) {
	if _, err := cachedBenchContract(); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		// kill closes the old server without draining, as a crash would.
		kill bool
		// down is how long the address stays dark before the new server
		// listens.
		down time.Duration
		// backoff is the client's reconnect backoff; zero for the default.
		backoff framework.Backoff
	}{
		{"drain/down=0", false, 0, framework.Backoff{}},
		{"drain/down=1s", false, time.Second, framework.Backoff{}},
		{"kill/down=1s", true, time.Second, framework.Backoff{}},
		{"kill/down=1s/backoff-max=20ms", true, time.Second, framework.Backoff{Max: 20 * time.Millisecond}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) { runReconnectGap(b, tc.kill, tc.down, tc.backoff) })
	}
}

func runReconnectGap(b *testing.B, kill bool, down time.Duration, backoff framework.Backoff) {
	b.StopTimer()
	cfg := benchServerConfig()
	// Beats every 200ms, so a drain ends as soon as the idle client's next
	// beat has been told of it.
	cfg.SessionTTL, cfg.Heartbeat = 2*time.Second, 200*time.Millisecond
	rs, l, _, err := listenBenchServer(b, "127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	defer func() {
		if rs != nil {
			_ = rs.stop(true)
		}
	}()
	cl := frameworktest.NewClient(b, benchContract(b, "1.0.0"), framework.ClientConfig{
		Component: "kubelet", Release: "1.31.0", Endpoints: []string{"http://" + addr}, Backoff: backoff})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = lockstepCall(ctx, cl, 0)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	// joined is when the new server opened the client's session, so a gap
	// splits into reaching the server (dial and handshake, paced by the
	// backoff) and the blocked call's wake-up and round trip.
	var joined atomic.Int64
	cfg.OnPeerJoined = func(framework.SessionInfo) { joined.CompareAndSwap(0, time.Now().UnixNano()) }
	gaps := make([]time.Duration, 0, b.N)
	toSession := make([]time.Duration, 0, b.N)
	for i := range b.N {
		if err := rs.stop(kill); err != nil {
			b.Fatal(err)
		}
		stopped := time.Now()
		rs = nil
		// The call is made once the client knows the server is gone (a
		// drained server told it; a killed one is noticed at the next beat),
		// so it blocks rather than racing the stop on a pooled connection.
		require.Eventually(b, func() bool { return cl.Ready() != nil }, 5*time.Second, time.Millisecond,
			"the client still routes to a stopped server")
		type outcome struct {
			end time.Time
			err error
		}
		result := make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := lockstepCall(ctx, cl, i)
			result <- outcome{time.Now(), err}
		}()
		time.Sleep(down - time.Since(stopped)) // real time: the server stays down for the downtime being measured
		joined.Store(0)
		var accepting time.Time
		rs, _, accepting, err = listenBenchServer(b, addr, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		o := <-result
		b.StopTimer()
		if o.err != nil {
			b.Fatalf("iteration %d: the blocked call failed: %v", i, o.err)
		}
		gaps = append(gaps, max(o.end.Sub(accepting), 0))
		if j := joined.Load(); j != 0 {
			toSession = append(toSession, max(time.Unix(0, j).Sub(accepting), 0))
		}
	}
	slices.Sort(gaps)
	slices.Sort(toSession)
	b.ReportMetric(float64(benchrun.Percentile(gaps, 0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(benchrun.Percentile(gaps, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(benchrun.Percentile(gaps, 1))/1e6, "max-ms")
	b.ReportMetric(float64(benchrun.Percentile(toSession, 0.5))/1e6, "session-p50-ms")
	b.ReportMetric(float64(benchrun.Percentile(toSession, 0.99))/1e6, "session-p99-ms")
}

// countingListener counts the connections a server accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// BenchmarkIdleSessionMemory measures P7: the memory an idle session costs,
// with sessions opened by many clients (one per simulated node, each its own
// instance) sharing one transport, as a node simulator runs them. Client and
// server share the process, so it reports three figures per session:
//
//   - server-B/session: what the server alone keeps, measured as the live
//     memory freed when the server is stopped and dropped (after the shared
//     transport's idle connections were closed, so neither side holds
//     connection buffers then);
//   - total-B/session: client and server together, connections open;
//   - goroutines/session: goroutines of both sides.
//
// Sessions are idle but alive: they share one [framework.Heartbeats], so one
// request a second renews them all, as a node simulator runs them.
func BenchmarkIdleSessionMemory(b *testing.B) {
	c := benchContract(b, "1.0.0")
	for _, sessions := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			var server, total, goroutines, conns float64
			for range b.N {
				m := measureIdleSessions(b, c, sessions)
				server += m.server
				total += m.total
				goroutines += m.goroutines
				conns += m.conns
			}
			n := float64(b.N)
			b.ReportMetric(server/n, "server-B/session")
			b.ReportMetric(total/n, "total-B/session")
			b.ReportMetric(goroutines/n, "goroutines/session")
			b.ReportMetric(conns/n, "conns")
		})
	}
}

type idleSessionMemory struct {
	server, total, goroutines, conns float64
}

func measureIdleSessions(b *testing.B, c *framework.Contract, sessions int) idleSessionMemory {
	b.Helper()
	cfg := benchServerConfig()
	srv, err := framework.NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	registerBenchHandlers[benchmsg.NodeStatus](srv, c)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	l := &countingListener{Listener: inner}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	url := "http://" + l.Addr().String()
	tr := framework.NewTransport(nil)
	defer tr.CloseIdleConnections()
	beats := framework.NewHeartbeats(frameworktest.Quiet(), nil)

	clients := make([]*framework.Client, 0, sessions)
	defer func() { closeClients(clients) }()
	before := benchrun.LiveMemory()
	// Open the sessions in waves, as nodes joining: the wave bounds how many
	// connections the shared transport opens.
	const wave = 100
	for len(clients) < sessions {
		start := len(clients)
		for range min(wave, sessions-start) {
			cl, err := framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Endpoints: []string{url}, Transport: tr, Heartbeats: beats, Logger: frameworktest.Quiet()})
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, cl)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, cl := range clients[start:] {
			if err := cl.WaitReady(ctx); err != nil {
				cancel()
				b.Fatal(err)
			}
		}
		cancel()
	}
	if got := len(srv.Sessions()); got != sessions {
		b.Fatalf("server holds %d sessions, want %d", got, sessions)
	}
	withConns := benchrun.LiveMemory()

	// Close the connections on both sides, then stop and drop the server:
	// what that frees is the server's.
	tr.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond) // real time: the server's connection goroutines end as they see the closes; nothing reports when all have
	withServer := benchrun.LiveMemory()
	if err := srv.Close(); err != nil {
		b.Fatal(err)
	}
	if err := <-served; err != nil {
		b.Fatal(err)
	}
	srv = nil
	withoutServer := benchrun.LiveMemory()
	return idleSessionMemory{
		server:     benchrun.PerItem(withoutServer, withServer, sessions),
		total:      benchrun.PerItem(before, withConns, sessions),
		goroutines: float64(withConns.Goroutines-before.Goroutines) / float64(sessions),
		conns:      float64(l.accepted.Load()),
	}
}

// closeClients closes clients a few dozen at a time.
func closeClients(clients []*framework.Client) {
	var wg sync.WaitGroup
	work := make(chan *framework.Client)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cl := range work {
				_ = cl.Close()
			}
		}()
	}
	for _, cl := range clients {
		work <- cl
	}
	close(work)
	wg.Wait()
}
