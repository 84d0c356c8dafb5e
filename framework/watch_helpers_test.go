package framework_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

var (
	topicContractsMu sync.Mutex
	topicContracts   = map[string]*framework.Contract{}
)

// topicContract returns the topics test contract at a version, built once.
func topicContract(t testing.TB, version string) *framework.Contract {
	t.Helper()
	topicContractsMu.Lock()
	defer topicContractsMu.Unlock()
	if c, ok := topicContracts[version]; ok {
		return c
	}
	c, err := framework.NewContract(topicmsg.Contract(version))
	require.NoError(t, err)
	topicContracts[version] = c
	return c
}

// topicServer is a nodecontroller holding every topic of the topics
// contract at one version.
type topicServer struct {
	*frameworktest.Running
	health   *framework.TopicWriter[topicmsg.NodeHealth]
	leases   *framework.TopicView[topicmsg.Lease]
	capacity *framework.TopicView[topicmsg.Capacity]
}

// topicServerOpts shape a topic server: its config, and options for every
// topic it holds.
type topicServerOpts struct {
	cfg    func(*framework.ServerConfig)
	topics []framework.TopicOption
	// state writes the topics before the server accepts its first
	// connection, so no watcher can see them half written.
	state func(*topicServer)
}

func startTopicServer(t testing.TB, addr, version string, o topicServerOpts) *topicServer {
	t.Helper()
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	c := topicContract(t, version)
	ts := &topicServer{}
	ts.Running = frameworktest.StartServerAt(t, addr, cfg, func(s *framework.Server) {
		ts.health = framework.ServeTopic[topicmsg.NodeHealth](s, c, topicmsg.TopicNodeHealth, o.topics...)
		ts.leases = framework.ServeClientTopic[topicmsg.Lease](s, c, topicmsg.TopicLease, o.topics...)
		ts.capacity = framework.ServeClientTopic[topicmsg.Capacity](s, c, topicmsg.TopicCapacity, o.topics...)
		if o.state != nil {
			o.state(ts)
		}
		framework.ServeOtherTopics(s, c, o.topics...)
	})
	return ts
}

// stats returns the server's stats of one topic.
func (ts *topicServer) stats(t testing.TB, topic string) framework.TopicStats {
	t.Helper()
	for _, st := range ts.Server.TopicStats() {
		if st.Topic == topic {
			return st
		}
	}
	t.Fatalf("no stats for topic %s", topic)
	return framework.TopicStats{}
}

// topicClient starts a kubelet client of the topics contract.
func topicClient(t testing.TB, version string, urls []string, mods ...func(*framework.ClientConfig)) *framework.Client {
	t.Helper()
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: urls, HandshakeWait: 5 * time.Second}
	for _, m := range mods {
		m(&cfg)
	}
	return frameworktest.NewClient(t, topicContract(t, version), cfg)
}

// cutTransport is a client transport whose connections a test can cut all
// at once, as a network failure would, and whose sockets can be given a
// small receive buffer so a slow reader pushes back on the server soon.
type cutTransport struct {
	*http.Transport
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	stalled chan struct{} // while non-nil, reads wait for it to close
}

// stall makes every read of the transport's connections wait until
// resume, as a client process that stopped reading would.
func (ct *cutTransport) stall() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.stalled == nil {
		ct.stalled = make(chan struct{})
	}
}

func (ct *cutTransport) resume() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.stalled != nil {
		close(ct.stalled)
		ct.stalled = nil
	}
}

// gatedConn is a connection whose reads a cutTransport can stall.
type gatedConn struct {
	net.Conn
	ct *cutTransport
}

func (g gatedConn) Read(p []byte) (int, error) {
	g.ct.mu.Lock()
	gate := g.ct.stalled
	g.ct.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.Conn.Read(p)
}

func newCutTransport(t testing.TB, readBuffer int) *cutTransport {
	ct := &cutTransport{Transport: framework.NewTransport(nil), conns: map[net.Conn]struct{}{}}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	ct.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tcp, ok := c.(*net.TCPConn); ok && readBuffer > 0 {
			_ = tcp.SetReadBuffer(readBuffer)
		}
		ct.mu.Lock()
		ct.conns[c] = struct{}{}
		ct.mu.Unlock()
		return gatedConn{c, ct}, nil
	}
	t.Cleanup(ct.CloseIdleConnections)
	return ct
}

// cut closes every connection the transport opened.
func (ct *cutTransport) cut() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	n := len(ct.conns)
	for c := range ct.conns {
		_ = c.Close()
	}
	clear(ct.conns)
	return n
}

// rawHandshake opens a session with a hello of its own, returning the
// token; the test then speaks the protocol by hand. The session is closed
// when the test ends, before the server's drain (cleanups run last first),
// as a client that goes away closes its own: a session left open holds
// the drain's first phase until DrainTimeout or the 10 s frameworktest
// gives a server's Stop, which a test then waits out.
func rawHandshake(t testing.TB, url string, c *framework.Contract, instance string) string {
	t.Helper()
	hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: c.Client(), Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
	require.NoError(t, err)
	resp, err := http.Post(url+protocol.PathHandshake, "application/json", bytes.NewReader(hello))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(body, &w))
	t.Cleanup(func() { closeRawSession(url, w.Session) })
	return w.Session
}

// closeRawSession closes a session opened by hand, best effort: the
// server may already be gone or have dropped the session.
func closeRawSession(url, token string) {
	body, _ := json.Marshal(map[string][]string{"sessions": {token}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url+protocol.PathSession, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// wireAnswer is an answer read by hand: status, the error code if any,
// and the body.
type wireAnswer struct {
	status int
	code   string
	body   string
}

func doRaw(t testing.TB, method, url, token, body string) wireAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set(protocol.HeaderSession, token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &e)
	return wireAnswer{status: resp.StatusCode, code: e.Code, body: string(b)}
}

// rawWatch opens a watch stream by hand and returns a reader of its
// frames; the stream is closed when the test ends.
func rawWatch(t testing.TB, url, token string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set(protocol.HeaderSession, token)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

// frame is a watch frame read by hand.
type frame struct {
	Type       string          `json:"type"`
	Key        string          `json:"key"`
	Epoch      string          `json:"epoch"`
	Seq        uint64          `json:"seq"`
	Object     json.RawMessage `json:"object"`
	WriterLost bool            `json:"writerLost"`
	Instance   string          `json:"instance"`
	Reason     string          `json:"reason"`
}

// readFrame reads the next frame that is not a ping.
func readFrame(t testing.TB, br *bufio.Reader) frame {
	t.Helper()
	for {
		line, err := br.ReadBytes('\n')
		require.NoError(t, err, "reading a frame")
		var f frame
		require.NoError(t, json.Unmarshal(line, &f), "frame %q", line)
		if f.Type != "ping" {
			return f
		}
	}
}

// heartbeatUntilEnd keeps a session opened by hand alive until the test
// ends.
func heartbeatUntilEnd(t testing.TB, url, token string, every time.Duration) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			req, _ := http.NewRequest(http.MethodPost, url+protocol.PathHeartbeat, nil)
			req.Header.Set(protocol.HeaderSession, token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

// health returns node n's health object at generation gen.
func health(n int, gen int64, padding int) *topicmsg.NodeHealth {
	return &topicmsg.NodeHealth{Node: fmt.Sprintf("node-%03d", n), Ready: gen%2 == 0, Score: gen % 101,
		Padding: strings.Repeat("x", padding)}
}

// requireCount waits for a count that changes after an informer's cache
// does, then requires it to be want: an informer calls its handlers after
// its cache changes (as client-go's does) and counts a sync after both, so
// a test that saw the cache converge can still read the count before it.
// Exactly want once reached: a count past want shows as soon as it is.
func requireCount(t testing.TB, want int64, count func() int64, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { return count() >= want }, 5*time.Second, time.Millisecond, msg)
	assert.Equal(t, want, count(), msg)
}

// requireCacheMatches waits until an informer's cache holds exactly what
// the server's topic holds: the same keys at the same versions.
func requireCacheMatches[T any](t testing.TB, name string, inf *framework.Informer[T], view *framework.TopicView[T], within time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, cacheDiff(inf, view), "%s did not converge within %v", name, within)
	}, within, 5*time.Millisecond)
}

func cacheDiff[T any](inf *framework.Informer[T], view *framework.TopicView[T]) string {
	want := view.Keys()
	got := inf.Keys()
	if len(want) != len(got) {
		return fmt.Sprintf("%d keys cached, %d held", len(got), len(want))
	}
	for _, k := range want {
		wv, _ := view.Version(k)
		gv, ok := inf.Version(k)
		if !ok || gv != wv {
			return fmt.Sprintf("key %s cached at %+v, held at %+v", k, gv, wv)
		}
		wo, _ := view.Get(k)
		go_, _ := inf.Get(k)
		wb, _ := json.Marshal(wo)
		gb, _ := json.Marshal(go_)
		if !bytes.Equal(wb, gb) {
			return fmt.Sprintf("key %s cached as %s, held as %s", k, gb, wb)
		}
	}
	return ""
}

// advanceClockAtCleanup advances clock, a server's fake clock, from the
// test's end until its cleanups are done: the server's drain waits out its
// quiet period and deadline on that clock, and one that stands still
// holds the server's Stop for its 10 s bound of real time (a Stop after
// the server stopped returns at once). Call it
// before starting the server, so that the advancing ends after the
// server's Stop.
func advanceClockAtCleanup(t *testing.T, clock *clockwork.FakeClock) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-t.Context().Done(): // the test's end, before its cleanups
		case <-stop:
			return
		}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				clock.Advance(50 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

// advanceUntil moves clock by step, again and again (a bounded number of
// times), until ch delivers, and returns what it delivered: for code that
// waits on the clock at moments the test cannot see.
func advanceUntil[T any](t *testing.T, clock *clockwork.FakeClock, step time.Duration, ch <-chan T, what string) T {
	t.Helper()
	for range 10000 {
		clock.Advance(step)
		select {
		case v := <-ch:
			return v
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal(what)
	panic("unreachable")
}
