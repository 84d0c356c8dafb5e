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
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Attacks by peers written elsewhere, against a live server, that once
// broke it; each test says what it did.

// tally is the counter contract's request: a message described by hand,
// with no generated decoder, so the runtime validates it with
// jsonschema/v5, as it does a pinned peer's answers and a client topic's
// objects.
type tally struct {
	N      int64             `json:"n"`
	Step   int64             `json:"step,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type tallied struct {
	Total int64 `json:"total"`
}

var counterContract = framework.MustContract(handshake.Contract{
	Name: "counter", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
	Methods: map[string]handshake.Method{"Add": {Request: "Tally", Response: "Tallied"}},
	Schemas: map[string]json.RawMessage{
		"Tally": json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":0},
			"step":{"type":"integer","minimum":1},"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`),
		"Tallied": json.RawMessage(`{"type":"object","required":["total"],"properties":{"total":{"type":"integer"}}}`),
	},
})

// startCounter serves the counter contract on plain HTTP, with add as
// the handler of Add and whatever more registers, and returns it with a
// session's token.
func startCounter(t *testing.T, cfg framework.ServerConfig, add func(context.Context, *tally) (*tallied, error),
	more ...func(*framework.Server)) (*frameworktest.Running, string) {
	t.Helper()
	cfg.Component, cfg.Release = "nodecontroller", "1.31.0"
	srv := frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		framework.HandleUnary(s, counterContract, "Add", add)
		for _, register := range more {
			register(s)
		}
	})
	return srv, counterSession(t, srv.URL, "counting")
}

// counterSession handshakes with the counter server at url as a client
// instance and returns the session's token.
func counterSession(t *testing.T, url, instance string) string {
	t.Helper()
	hello, err := json.Marshal(handshake.Hello{Contract: counterContract.Name(), Component: "kubelet", Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{counterContract.Offer()}})
	require.NoError(t, err)
	a := do(t, http.MethodPost, url+protocol.PathHandshake, nil, hello)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(a.body, &w))
	t.Cleanup(func() { closeRawSession(url, w.Session) })
	return w.Session
}

func addOne(_ context.Context, n *tally) (*tallied, error) {
	return &tallied{Total: n.N + 1 + n.Step}, nil
}

// multiResults decodes a multi-call's answer into its items' codes ("ok"
// for a result).
func multiResults(t *testing.T, a rawAnswer) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var out struct {
		Results []struct {
			OK    json.RawMessage `json:"ok"`
			Error *struct{ Code string }
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(a.body, &out))
	codes := make([]string, len(out.Results))
	for i, r := range out.Results {
		codes[i] = "ok"
		if r.Error != nil {
			codes[i] = r.Error.Code
		}
	}
	return codes
}

// A number jsonschema/v5 cannot read as a big.Rat (an exponent past a
// million) made it panic: a call's connection was cut without an answer,
// and a multi-call, whose calls run on goroutines of their own, ended the
// process. Numbers it can read but only slowly (an exponent near a
// million, a million digits) kept a core busy for tens of milliseconds to
// seconds each. Both are refused as invalid_argument before validation.
func TestOutOfRangeNumbersAreInvalidArguments(t *testing.T) {
	srv, token := startCounter(t, framework.ServerConfig{}, addOne)
	call := srv.URL + protocol.CallPath("counter", "1.0.0", "Add")
	multi := srv.URL + protocol.CallPath("counter", "1.0.0", protocol.MultiCallMethod)
	session := map[string]string{protocol.HeaderSession: token}

	for _, n := range []string{"1e1000001", "1E-99999999999999999999", "1e999999", "-1e-999999", strings.Repeat("7", 100000),
		"0." + strings.Repeat("7", 100000)} {
		a := do(t, http.MethodPost, call, session, []byte(`{"n":`+n+`}`))
		assert.Equal(t, string(framework.CodeInvalidArgument), a.code, "%.20s: %s", n, a.body)
		assert.Contains(t, a.message, "out of range", "%.20s", n)
		err := counterContract.ValidateJSON("Tally", []byte(`{"n":`+n+`}`))
		assert.ErrorIs(t, err, framework.ErrNumberOutOfRange, "%.20s", n)
		assert.Equal(t, framework.CodeInvalidArgument, framework.CodeOf(err), "%.20s: %v", n, err)
	}
	a := do(t, http.MethodPost, multi, session, []byte(`{"calls":[{"method":"Add","request":{"n":1e1000001}},{"method":"Add","request":{"n":1}}]}`))
	assert.Equal(t, []string{string(framework.CodeInvalidArgument), "ok"}, multiResults(t, a))

	// Numbers a contract's types hold are read as before.
	for _, n := range []string{"0", "9223372036854775807", "1e3", "1.0", "-0"} {
		require.NoError(t, counterContract.ValidateJSON("Tally", []byte(`{"n":`+n+`}`)), n)
	}
	a = do(t, http.MethodPost, call, session, []byte(`{"n":41}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	assert.JSONEq(t, `{"total":42}`, string(a.body))
}

// The calls of a multi-call run on goroutines of the server's own, where
// a panicking handler (a bug a peer's input reaches) ended the process;
// net/http recovers the same panic in a call sent alone and ends only its
// request. The call that panicked is answered internal, the others as
// usual, and the server keeps serving.
func TestPanicInAMultiCallEndsOnlyThatCall(t *testing.T) {
	srv, token := startCounter(t, framework.ServerConfig{}, func(ctx context.Context, n *tally) (*tallied, error) {
		if n.N == 13 {
			panic("unlucky")
		}
		return addOne(ctx, n)
	})
	multi := srv.URL + protocol.CallPath("counter", "1.0.0", protocol.MultiCallMethod)
	session := map[string]string{protocol.HeaderSession: token}
	a := do(t, http.MethodPost, multi, session, []byte(`{"calls":[{"method":"Add","request":{"n":13}},{"method":"Add","request":{"n":1}}]}`))
	assert.Equal(t, []string{string(framework.CodeInternal), "ok"}, multiResults(t, a))
	a = do(t, http.MethodPost, multi, session, []byte(`{"calls":[{"method":"Add","request":{"n":13}}]}`))
	assert.Equal(t, []string{string(framework.CodeInternal)}, multiResults(t, a), "a multi-call of one call")
	a = do(t, http.MethodPost, srv.URL+protocol.CallPath("counter", "1.0.0", "Add"), session, []byte(`{"n":41}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
}

// A body no handler reads is discarded by net/http before it answers,
// with no deadline: a peer that declared a body and never sent it held
// its connection, and a goroutine, for good, unanswered; /healthz, which
// anyone may reach, was enough. Every body must now arrive within
// Limits.BodyReadTimeout from its headers, and such a request is answered
// once it passes. A handler that has read its body and answers later is
// not cut short by the deadline (a binary's own route, here).
func TestUnreadBodiesAreBoundedByTheBodyReadTimeout(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	srv, token := startCounter(t, framework.ServerConfig{Limits: framework.Limits{BodyReadTimeout: readTimeout}}, addOne,
		func(s *framework.Server) {
			s.Handle("/own", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				// The body deadline is the socket's, on real time, which
				// no fake clock moves: only real time past it shows that
				// it does not cut a handler that has read its body.
				time.Sleep(2 * readTimeout)
				if r.Context().Err() != nil {
					http.Error(w, "canceled", http.StatusServiceUnavailable)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
		})
	heads := []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET /lockstep/status HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /lockstep/heartbeat HTTP/1.1\r\nHost: x\r\nLockstep-Session: " + token + "\r\nContent-Length: 10\r\n\r\n",
		"DELETE /lockstep/session HTTP/1.1\r\nHost: x\r\nLockstep-Session: unknown\r\nContent-Length: 10\r\n\r\n",
	}
	var wg sync.WaitGroup
	for _, head := range heads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", srv.Addr)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			_, err = io.WriteString(conn, head)
			assert.NoError(t, err)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if assert.NoError(t, err, "%q is answered", head) {
				resp.Body.Close()
				assert.Less(t, resp.StatusCode, 300, "%q", head)
			}
		}()
	}
	wg.Wait()
	a := do(t, http.MethodPost, srv.URL+"/own", nil, []byte("a body"))
	assert.Equal(t, http.StatusOK, a.status, "%s", a.body)
}

// Idempotency records were bounded per client instance, not per peer: a
// peer that handshook under ever new instances (a closed session leaves
// its records behind) kept IdempotencyKeysPerPeer records for each, and a
// key's own bytes (up to the 64 KiB header limit) counted for nothing,
// so one peer's records grew without bound for the whole window. They are
// bounded per peer and contract, keys included (the byte bound is
// TestReplayStoreCountsKeysAndBoundsEachPeer's), each instance's keys
// still its own.
func TestIdempotencyRecordsAreBoundedPerPeerNotPerInstance(t *testing.T) {
	const keys = 4
	srv, _ := startCounter(t, framework.ServerConfig{IdempotencyKeysPerPeer: keys}, addOne)
	call := srv.URL + protocol.CallPath("counter", "1.0.0", "Add")
	keyed := func(token, key string) (replayed string) {
		t.Helper()
		a := do(t, http.MethodPost, call, map[string]string{protocol.HeaderSession: token, protocol.HeaderIdempotencyKey: key}, []byte(`{"n":1}`))
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		return a.header.Get(protocol.HeaderReplayed)
	}
	var tokens []string
	for i := range 3 {
		token := counterSession(t, srv.URL, fmt.Sprintf("instance-%d", i))
		for k := range keys {
			require.Empty(t, keyed(token, fmt.Sprint("key-", k)), "instance %d's key %d is its own", i, k)
		}
		tokens = append(tokens, token)
	}
	assert.Equal(t, "1", keyed(tokens[2], "key-0"), "the newest records are kept")
	assert.Empty(t, keyed(tokens[0], "key-0"), "the oldest instance's records are forgotten")
}

// A refused hello sent with ?wait= is held until the wait ends (up to
// MaxHandshakeWait, a minute) or the server drains, on a goroutine and a
// connection of the server's: a peer could hold as many as its request
// rate allowed, 20,000 at once by default and more every second. A held
// refusal now counts as a call in flight of its peer; beyond
// Limits.InFlightPerPeer it is answered at once, as without ?wait=.
func TestHeldRefusalsCountAsCallsInFlight(t *testing.T) {
	clock := clockwork.NewFakeClock()
	srv, _ := startCounter(t, framework.ServerConfig{Clock: clock, Limits: framework.Limits{InFlightPerPeer: 2}}, addOne)
	t.Cleanup(func() { _ = srv.Kill() }) // releases the held refusals; a drain would wait on the fake clock
	newer := framework.MustContract(handshake.Contract{Name: "counter", Version: "2.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: counterContract.Model().Methods, Schemas: counterContract.Model().Schemas})
	hello, err := json.Marshal(handshake.Hello{Contract: "counter", Component: "kubelet", Instance: "ahead", Release: "1.31.0",
		Offers: []handshake.Offer{newer.Offer()}})
	require.NoError(t, err)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(client.CloseIdleConnections)
	refuse := func() (int, error) {
		resp, err := client.Post(srv.URL+protocol.PathHandshake+"?wait=1m", "application/json", bytes.NewReader(hello))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	held := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := refuse()
			held <- err
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, clock.BlockUntilContext(ctx, 3), "the session expiry's ticker and two held refusals")
	status, err := refuse()
	require.NoError(t, err, "the third held refusal is answered at once")
	assert.Equal(t, http.StatusConflict, status)
	assert.Zero(t, refusals(t, srv.Server, "in_flight_per_peer"),
		"a refusal answered at once is not a refusal for calls in flight")
	require.NoError(t, srv.Kill())
	for range 2 {
		<-held // answered draining, or cut: either way no longer held
	}
}

// Under mutual TLS a request without a verified certificate may reach the
// health probes and nothing else (docs/security.md), but the routing
// refusals came first: such a peer was told not_found for a contract,
// version, method or topic the server does not serve and
// incompatible_peer or handshake_required for one it does, which maps
// what the server serves. It is now told unauthenticated; a peer with a
// certificate still gets the routing refusal.
func TestUnauthenticatedPeersLearnNothingOfWhatIsServed(t *testing.T) {
	m := startMTLSServer(t)
	anonymous := m.peer(t, nil)
	stranger := m.peer(t, m.issue(t, frameworktest.NewCA(t), certs.Spec{Component: "kubelet", Name: "node-1"}))
	kubelet := m.kubelet(t, "node-1")
	requests := []struct {
		method, path string
		code         framework.Code // what a peer with a certificate is told
	}{
		{http.MethodPost, protocol.CallPath("nodeweather", "1.0.0", "Get"), framework.CodeNotFound},
		{http.MethodPost, protocol.CallPath("bench", "9.0.0", "ReportStatus"), framework.CodeIncompatiblePeer},
		{http.MethodPost, protocol.CallPath("bench", "1.0.0", "Reboot"), framework.CodeNotFound},
		{http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"), framework.CodeHandshakeRequired},
		{http.MethodPost, protocol.CallPath("bench", "1.0.0", protocol.MultiCallMethod), framework.CodeHandshakeRequired},
		{http.MethodGet, "/lockstep/bench/1.0.0/watch/Nodes", framework.CodeNotFound},
		{http.MethodPost, "/lockstep/bench/1.0.0/topics/Nodes", framework.CodeNotFound},
		{http.MethodGet, "/lockstep/nothing", framework.CodeNotFound},
		{http.MethodGet, protocol.PathHandshake, framework.CodeNotFound},
		{http.MethodGet, "/nothing", framework.CodeNotFound},
	}
	for _, rq := range requests {
		for _, p := range []*mtlsPeer{anonymous, stranger} {
			a := p.do(rq.method, rq.path, "", []byte(`{}`))
			assert.Equal(t, string(framework.CodeUnauthenticated), a.code, "%s %s: %s", rq.method, rq.path, a.body)
		}
		a := kubelet.do(rq.method, rq.path, "", []byte(`{}`))
		assert.Equal(t, string(rq.code), a.code, "%s %s with a certificate: %s", rq.method, rq.path, a.body)
	}
	assert.Equal(t, http.StatusOK, anonymous.do(http.MethodGet, "/healthz", "", nil).status)
}

// A client topic's object of a type without generated checks was
// validated against its schema only, not decoded: a writer could set an
// object its schema allows but its Go type cannot hold (an integer beyond
// int64), which the server's own view then could not read (Get said the
// key was absent) and every typed watcher skipped with a warning, while
// the writer was told it applied. Such an object is now invalid_argument,
// as a call's request is.
func TestClientTopicObjectsMustDecodeIntoTheirType(t *testing.T) {
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{})
	token := rawHandshake(t, ts.URL, topicContract(t, "1.0.0"), "kubelet-a")
	write := ts.URL + "/lockstep/topics/1.0.0/topics/" + topicmsg.TopicLease
	session := map[string]string{protocol.HeaderSession: token}
	a := do(t, http.MethodPost, write, session, []byte(`{"set":{"node":"node-1","renewals":123456789012345678901234567890}}`))
	assert.Equal(t, string(framework.CodeInvalidArgument), a.code, "%s", a.body)
	_, held := ts.leases.Get("node-1")
	assert.False(t, held)
	a = do(t, http.MethodPost, write, session, []byte(`{"set":{"node":"node-1","renewals":7}}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	lease, held := ts.leases.Get("node-1")
	require.True(t, held)
	assert.Equal(t, int64(7), lease.Renewals)
}

// A topic bounded its keys, not their bytes: one writer of a client
// topic could set 100,000 keys (WithMaxKeys) of up to 4 MiB each
// (MaxBodyBytes), which the server holds for as long as the writer's
// session lives (or, for a topic that keeps a lost writer's keys, for
// good). A write that would take a topic's objects over WithMaxBytes is
// refused resource_exhausted, as one over its keys is; a write that makes
// an object smaller, or deletes one, is not. (The writer may hold all of
// the topic here: a writer's share is TestOneWriterCannotFillAClientTopic's.)
func TestTopicObjectsAreBoundedInBytes(t *testing.T) {
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{topics: []framework.TopicOption{
		framework.WithMaxBytes(64 << 10), framework.WithMaxBytesPerWriter(64 << 10)}})
	token := rawHandshake(t, ts.URL, topicContract(t, "1.0.0"), "kubelet-a")
	write := ts.URL + "/lockstep/topics/1.0.0/topics/" + topicmsg.TopicLease
	session := map[string]string{protocol.HeaderSession: token}
	lease := func(node string, padding int) []byte {
		b, err := json.Marshal(map[string]any{"set": topicmsg.Lease{Node: node, Renewals: 1, Padding: strings.Repeat("x", padding)}})
		require.NoError(t, err)
		return b
	}
	for i := range 3 {
		a := do(t, http.MethodPost, write, session, lease(fmt.Sprint("node-", i), 20<<10))
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	}
	a := do(t, http.MethodPost, write, session, lease("node-3", 20<<10))
	assert.Equal(t, string(framework.CodeResourceExhausted), a.code, "%s", a.body)
	a = do(t, http.MethodPost, write, session, lease("node-0", 30<<10))
	assert.Equal(t, string(framework.CodeResourceExhausted), a.code, "a larger object: %s", a.body)
	a = do(t, http.MethodPost, write, session, lease("node-0", 1<<10))
	require.Equal(t, http.StatusOK, a.status, "a smaller object: %s", a.body)
	a = do(t, http.MethodPost, write, session, lease("node-3", 20<<10))
	require.Equal(t, http.StatusOK, a.status, "room made: %s", a.body)
	a = do(t, http.MethodPost, write, session, []byte(`{"delete":"node-1"}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = do(t, http.MethodPost, write, session, lease("node-4", 20<<10))
	require.Equal(t, http.StatusOK, a.status, "room made by a delete: %s", a.body)
}

// encoding/json matches a member to a Go field by case folding, while
// the schema validator matches members exactly: a message of a Go type
// without a generated decoder whose schema allows unknown members could
// carry {"n":1,"N":-5}, validated as n=1 and handed to the handler as
// n=-5, or {"STEP":-3} for an optional step that must be at least 1.
// A member spelled otherwise than the field it decodes into is now
// invalid_argument (a message declared case-insensitive is validated
// as it decodes instead); members of a map stay as sent.
func TestMembersSpelledByCaseFoldingAreInvalid(t *testing.T) {
	srv, token := startCounter(t, framework.ServerConfig{}, addOne)
	call := srv.URL + protocol.CallPath("counter", "1.0.0", "Add")
	session := map[string]string{protocol.HeaderSession: token}
	for _, body := range []string{`{"n":1,"N":-5}`, `{"N":-5,"n":1}`, `{"n":1,"STEP":-3}`, `{"n":1,"\u0053tep":-3}`, `{"n":1,"ſtep":-3}`} {
		a := do(t, http.MethodPost, call, session, []byte(body))
		assert.Equal(t, string(framework.CodeInvalidArgument), a.code, "%s: %s", body, a.body)
	}
	for body, total := range map[string]string{
		`{"n":1,"step":2}`:                       `{"total":4}`,
		`{"n":1,"labels":{"App":"a","app":"b"}}`: `{"total":2}`,
		`{"n":1,"unknown":true,"Unknown":false}`: `{"total":2}`,
	} {
		a := do(t, http.MethodPost, call, session, []byte(body))
		require.Equal(t, http.StatusOK, a.status, "%s: %s", body, a.body)
		assert.JSONEq(t, total, string(a.body), body)
	}
}

// A topic write is admitted on its headers and applied once its body has
// arrived: a writer that closed its session in between had its
// lost-writer policy applied before its write, which then made a
// writer no session backs. Its key stayed for good, under a topic that
// deletes a lost writer's keys, and every other writer of it got
// conflict. A write whose instance no longer holds a session is now
// refused handshake_required, unprocessed, and applies nothing.
func TestTopicWriteAfterItsSessionIsLostAppliesNothing(t *testing.T) {
	admitted := make(chan struct{}, 1)
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: func(cfg *framework.ServerConfig) {
		cfg.Authorizer = framework.AuthorizerFunc(func(_ context.Context, e *framework.Entry) error {
			if e.Kind == framework.EntryTopicWrite {
				admitted <- struct{}{}
			}
			return nil
		})
	}})
	c := topicContract(t, "1.0.0")
	squatter := rawHandshake(t, ts.URL, c, "squatter")
	body := `{"set":{"node":"node-1","renewals":1}}`
	conn, err := net.Dial("tcp", ts.Addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /lockstep/topics/1.0.0/topics/%s HTTP/1.1\r\nHost: x\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		topicmsg.TopicLease, protocol.HeaderSession, squatter, len(body))
	require.NoError(t, err)
	// The write is admitted (the Authorizer sees it) before its body is
	// read; the close is answered once the session is gone.
	<-admitted
	closeRawSession(ts.URL, squatter)
	require.Empty(t, ts.Server.Sessions())
	_, err = io.WriteString(conn, body)
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "handshake_required")
	assert.Equal(t, "1", resp.Header.Get(protocol.HeaderNotProcessed))

	_, held := ts.leases.Get("node-1")
	assert.False(t, held, "nothing was applied")
	honest := rawHandshake(t, ts.URL, c, "honest")
	a := do(t, http.MethodPost, ts.URL+"/lockstep/topics/1.0.0/topics/"+topicmsg.TopicLease, map[string]string{protocol.HeaderSession: honest}, []byte(body))
	assert.Equal(t, http.StatusOK, a.status, "another writer takes the key: %s", a.body)
}
