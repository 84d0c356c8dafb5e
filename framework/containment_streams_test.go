package framework_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Attack 7: HTTP/2 multiplied a connection's cost. A hello, a heartbeat's
// and a session close's body were read before anything counted them, so
// one kubelet certificate's 200 connections of 250 streams each, hellos
// whose bodies never came, held about 1 GB until the body deadline. Every
// body on its way now counts against the peer's Limits.BodiesPerPeer,
// over all its connections: beyond it a stream is refused at once,
// unread, and another peer is served meanwhile.
func TestContainStalledHTTP2StreamsAreBoundedPerIdentity(t *testing.T) {
	// Parallel: its server, CA and peers are its own; it mostly waits out
	// its server's body read timeout.
	t.Parallel()
	const inFlight = 16
	a := startContainServer(t, framework.Limits{BodiesPerPeer: inFlight, BodyReadTimeout: 3 * time.Second})
	before := refusals(t, a.Server, "bodies_per_peer")
	const conns, streams = 3, 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		answers = map[string]int{}
		wg      sync.WaitGroup
		writers []*io.PipeWriter
	)
	for c := range conns {
		cfg := a.tlsConfig(t, certs.Spec{Component: "kubelet", Name: "evil"})
		tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
		t.Cleanup(tr.CloseIdleConnections)
		hc := &http.Client{Transport: tr}
		for range streams {
			pr, pw := io.Pipe()
			writers = append(writers, pw)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+protocol.PathHandshake, pr)
			require.NoError(t, err)
			req.ContentLength = 4000
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Do(req)
				if err != nil {
					mu.Lock()
					answers["error"]++
					mu.Unlock()
					return
				}
				defer resp.Body.Close()
				var e struct{ Code string }
				_ = json.NewDecoder(resp.Body).Decode(&e)
				mu.Lock()
				answers[e.Code]++
				mu.Unlock()
				assert.Equal(t, 2, resp.ProtoMajor, "connection %d speaks HTTP/2", c)
			}()
		}
	}
	// The refusals come at once; the held streams wait for the deadline.
	require.Eventually(t, func() bool {
		return refusals(t, a.Server, "bodies_per_peer")-before >= conns*streams-inFlight
	}, 20*time.Second, 10*time.Millisecond, "streams beyond the peer's bodies on their way are refused")

	good := a.attackerAs(t, "good-node")
	code, token := good.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(benchContract(t, "1.0.0"), "good-node"))
	require.Equal(t, http.StatusOK, code, "another peer handshakes while the streams are held: %s", token)

	wg.Wait()
	for _, pw := range writers {
		pw.Close()
	}
	assert.Equal(t, conns*streams-inFlight, answers[string(framework.CodeResourceExhausted)], "%v", answers)
	assert.Equal(t, inFlight, answers[string(framework.CodeDeadlineExceeded)], "the held streams end at the body deadline: %v", answers)
	assert.Equal(t, float64(conns*streams-inFlight), refusals(t, a.Server, "bodies_per_peer")-before)
}

// Attack 7 with calls: a call's body counted among the peer's calls in
// flight (8,192 by default) while it was read, so stalled calls over
// HTTP/2 held as many streams as stalled hellos did, and beside them.
// Calls and hellos now share the peer's bodies on their way: of half the
// bound's stalled hellos and the whole bound's stalled calls, the bound
// is held and the rest refused, while the peer's calls in flight stay far
// from their own bound and another peer's calls are served.
func TestContainStalledCallBodiesShareTheBoundWithHellos(t *testing.T) {
	// Parallel: its server, CA and peers are its own; it mostly waits out
	// its server's body read timeout.
	t.Parallel()
	const bodies = 16
	a := startContainServer(t, framework.Limits{BodiesPerPeer: bodies, BodyReadTimeout: 3 * time.Second})
	before := refusals(t, a.Server, "bodies_per_peer")
	evil := a.h2Attacker(t, "evil")
	bench := benchContract(t, "1.0.0")
	code, token := evil.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(bench, "evil-0"))
	require.Equal(t, http.StatusOK, code, token)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		answers = map[string]int{}
		wg      sync.WaitGroup
		writers []*io.PipeWriter
	)
	stall := func(path string) {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+path, pr)
		require.NoError(t, err)
		req.ContentLength = 4000
		if path != protocol.PathHandshake {
			req.Header.Set(protocol.HeaderSession, token)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := evil.hc.Do(req)
			if err != nil {
				mu.Lock()
				answers["error"]++
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			var e struct{ Code string }
			_ = json.NewDecoder(resp.Body).Decode(&e)
			mu.Lock()
			answers[path+" "+e.Code]++
			mu.Unlock()
		}()
	}
	call := protocol.CallPath("bench", "1.0.0", "ReportStatus")
	for i := range bodies + bodies/2 {
		if i%3 == 0 {
			stall(protocol.PathHandshake)
		} else {
			stall(call)
		}
	}
	require.Eventually(t, func() bool {
		return refusals(t, a.Server, "bodies_per_peer")-before >= bodies/2
	}, 20*time.Second, 10*time.Millisecond, "stalled calls beyond the bound are refused")
	assert.Zero(t, refusals(t, a.Server, "in_flight_per_peer"), "the calls in flight are not what bounds them")

	good := benchClient(t, "1.0.0", []string{a.URL}, func(c *framework.ClientConfig) {
		creds, _ := frameworktestCredentials(t, a, "good-node")
		c.Transport = creds.Transport("")
	})
	_, err := report(timeout(t, 10*time.Second), good, 3)
	require.NoError(t, err, "another peer's calls are served while the bodies are held")

	wg.Wait()
	for _, pw := range writers {
		pw.Close()
	}
	refused := answers[call+" "+string(framework.CodeResourceExhausted)] + answers[protocol.PathHandshake+" "+string(framework.CodeResourceExhausted)]
	held := answers[call+" "+string(framework.CodeDeadlineExceeded)] + answers[protocol.PathHandshake+" "+string(framework.CodeDeadlineExceeded)]
	assert.Equal(t, bodies/2, refused, "%v", answers)
	assert.Equal(t, bodies, held, "the held bodies end at the deadline: %v", answers)
	assert.Positive(t, answers[call+" "+string(framework.CodeDeadlineExceeded)], "stalled calls were among the held: %v", answers)
	assert.Equal(t, float64(bodies/2), refusals(t, a.Server, "bodies_per_peer")-before)
}
