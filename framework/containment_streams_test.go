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
// whose bodies never came, held about 1 GB until the body deadline. Such a
// body read now counts as one of the peer's calls in flight
// (Limits.InFlightPerPeer): beyond it a stream is refused at once, unread,
// and another peer is served meanwhile.
func TestContainStalledHTTP2StreamsAreBoundedPerIdentity(t *testing.T) {
	const inFlight = 16
	a := startContainServer(t, framework.Limits{InFlightPerPeer: inFlight, BodyReadTimeout: 3 * time.Second})
	before := refusals(t, a.Server, "in_flight_per_peer")
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
		return refusals(t, a.Server, "in_flight_per_peer")-before >= conns*streams-inFlight
	}, 20*time.Second, 10*time.Millisecond, "streams beyond the peer's calls in flight are refused")

	good := a.attackerAs(t, "good-node")
	code, token := good.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(benchContract(t, "1.0.0"), "good-node"))
	require.Equal(t, http.StatusOK, code, "another peer handshakes while the streams are held: %s", token)

	wg.Wait()
	for _, pw := range writers {
		pw.Close()
	}
	assert.Equal(t, conns*streams-inFlight, answers[string(framework.CodeResourceExhausted)], "%v", answers)
	assert.Equal(t, inFlight, answers[string(framework.CodeDeadlineExceeded)], "the held streams end at the body deadline: %v", answers)
	assert.Equal(t, float64(conns*streams-inFlight), refusals(t, a.Server, "in_flight_per_peer")-before)
}
