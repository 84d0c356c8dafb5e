package framework_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// startReplica starts a nodecontroller replica serving the bench contract
// under mutual TLS with a certificate of its own from ca: its own TLS
// configuration, so its own session ticket keys. Its sessions live ten
// minutes and its clients heartbeat once a minute, so that on a loaded
// machine no session lapses and no heartbeat takes a connection while a
// test counts them; the drain stays as short as a 1s heartbeat made it.
// Its ReportStatus answers with ack, or accepts everything when ack is nil.
func startReplica(t *testing.T, ca *certs.CA, name string, ack func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error)) *frameworktest.Running {
	t.Helper()
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: name})
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds,
		SessionTTL: 10 * time.Minute, Heartbeat: time.Minute, DrainTimeout: 3 * time.Second}
	accept := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true}, nil
	}
	if ack == nil {
		ack = accept
	}
	return frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		c := benchContract(t, "1.0.0")
		framework.HandleUnary(s, c, "ReportStatus", ack)
		framework.HandleBatch(s, c, "ReportStatuses", accept)
	})
}

// TestMTLSResumesEachReplica dials two replicas on 127.0.0.1 (one server
// name, as replicas behind a headless Service share theirs) in turn, each
// time on a new connection: after the first handshake with each, every
// handshake resumes its session, because tickets are kept per address. With
// one ticket per server name each replica was shown the other's ticket and
// every handshake was a full one.
func TestMTLSResumesEachReplica(t *testing.T) {
	ca := frameworktest.NewCA(t)
	a, b := startReplica(t, ca, "nc-0", nil), startReplica(t, ca, "nc-1", nil)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "kubelet", Name: "node-1"})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	const rounds = 6
	for i := 0; i < rounds; i++ {
		for _, url := range []string{a.URL, b.URL} {
			resp, err := hc.Get(url + "/healthz")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			tr.CloseIdleConnections() // the next request dials anew
		}
	}
	h := creds.Handshakes()
	assert.Equal(t, uint64(2), h.ClientFull, "one full handshake per replica: %+v", h)
	assert.Equal(t, uint64(2*rounds-2), h.ClientResumed, "every later connection resumed: %+v", h)
}

// TestMTLSClientReusesConnections makes N sequential and then N concurrent
// calls (from 8 callers) through one client's mutual TLS transport: the
// sequential calls share a connection, the concurrent ones open about one
// per caller, and every connection after the first resumes its session.
//
// The concurrent calls start with one call per caller that the server
// holds until all of them have arrived, so that the pool holds a
// connection per caller before the rest are made: without it, on a loaded
// machine, a caller whose dial was slow took a connection another freed,
// its dial still joined the pool, and its next call dialled again, so the
// connections counted followed the machine's load.
func TestMTLSClientReusesConnections(t *testing.T) {
	const n, callers, warmup = 80, 8, 1000 // warmup: the held calls' first node
	ctx := timeout(t, 20*time.Second)
	held := map[string]bool{}
	for c := 0; c < callers; c++ {
		held[benchmsg.Node(warmup+c).NodeName] = true
	}
	var mu sync.Mutex
	arrived, allArrived := 0, make(chan struct{})
	ack := func(_ context.Context, s *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		if held[s.NodeName] {
			mu.Lock()
			if arrived++; arrived == callers {
				close(allArrived)
			}
			mu.Unlock()
			select {
			case <-allArrived:
			case <-ctx.Done():
				return nil, framework.Errorf(framework.CodeDeadlineExceeded, "the held calls did not all arrive")
			}
		}
		return &benchmsg.Ack{Accepted: true}, nil
	}
	ca := frameworktest.NewCA(t)
	srv := startReplica(t, ca, "nc-0", ack)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "kubelet", Name: "node-1"})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) { c.Transport = tr })
	_, err := report(ctx, cl, 0) // the session's hello and first call
	require.NoError(t, err)
	conns := func() uint64 { h := creds.Handshakes(); return h.ClientFull + h.ClientResumed }
	before := conns()

	for i := 0; i < n; i++ {
		_, err := report(ctx, cl, i)
		require.NoError(t, err)
	}
	// A heartbeat may take the idle connection for a moment (none is due
	// within a minute of the hello, but the bound allows for one).
	assert.LessOrEqual(t, conns()-before, uint64(1), "sequential calls reuse one connection")

	before = conns()
	var wg sync.WaitGroup
	errs := make(chan error, n+callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			if _, err := report(ctx, cl, warmup+c); err != nil {
				errs <- err
			}
			for i := c; i < n; i += callers {
				if _, err := report(ctx, cl, i); err != nil {
					errs <- err
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// A dial started for a caller that then took a connection freed
	// meanwhile still joins the pool, so the bound is twice the callers:
	// what matters is that it does not grow with the calls.
	assert.LessOrEqual(t, conns()-before, uint64(2*callers), "connections follow the concurrency, not the calls")
	h := creds.Handshakes()
	assert.Equal(t, uint64(1), h.ClientFull, "every connection after the first resumed: %+v", h)
}
