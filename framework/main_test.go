package framework_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(serverChildEnv) != "" {
		os.Exit(runServerChild())
	}
	if os.Getenv(applyChildEnv) != "" {
		os.Exit(runApplyChild())
	}
	goleak.VerifyTestMain(m)
}

// childEnv makes the test binary act as a separate kubelet process, so
// tests can kill a real client process.
const childEnv = "LOCKSTEP_TEST_CHILD_SERVER"

// serverChildEnv makes the test binary act as a separate nodecontroller
// process listening on the address it names, so a benchmark can measure
// the server's own CPU.
const serverChildEnv = "LOCKSTEP_TEST_CHILD_LISTEN"

// serverChildHeartbeatEnv, when set, is the heartbeat interval of the
// server child (its TTL three of them).
const serverChildHeartbeatEnv = "LOCKSTEP_TEST_CHILD_HEARTBEAT"

// runServerChild serves the bench contract (TTL 5s, heartbeat 1s, unless
// serverChildHeartbeatEnv says otherwise) until killed; it prints "ready"
// once it listens.
func runServerChild() int {
	c, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ttl, beat := 5*time.Second, time.Second
	if d, err := time.ParseDuration(os.Getenv(serverChildHeartbeatEnv)); err == nil {
		ttl, beat = 3*d, d
	}
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: ttl, Heartbeat: beat, Logger: frameworktest.Quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true}, nil
	}
	framework.HandleUnary(srv, c, "ReportStatus", ack)
	framework.HandleBatch(srv, c, "ReportStatuses", ack)
	l, err := net.Listen("tcp", os.Getenv(serverChildEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	go func() { time.Sleep(5 * time.Minute); os.Exit(3) }() // a bound in case nobody kills it
	if err := srv.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// runChild holds a bench session with the server named in childEnv until it
// is killed; it prints "ready" once the session is up.
func runChild() int {
	c, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cl, err := framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Instance: "child-process", Endpoints: []string{os.Getenv(childEnv)}, Logger: frameworktest.Quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.WaitReady(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	time.Sleep(time.Minute) // until killed; a bound in case nobody does
	return 0
}

// contracts are built once: compiling schemas is not what these tests test.
// Parallel tests share them.
var (
	contractsMu sync.Mutex
	contracts   = map[string]*framework.Contract{}
)

func benchContract(t testing.TB, version string) *framework.Contract {
	t.Helper()
	contractsMu.Lock()
	defer contractsMu.Unlock()
	if c, ok := contracts[version]; ok {
		return c
	}
	c, err := framework.NewContract(benchmsg.Contract(version))
	if err != nil {
		t.Fatal(err)
	}
	contracts[version] = c
	return c
}

// benchServer is a nodecontroller serving the bench contract at one version,
// counting the calls its handler processed.
type benchServer struct {
	*frameworktest.Running
	version string
	handled atomic.Int64
	// entered counts calls that reached the handler, held or not.
	entered atomic.Int64
	// hold, if set, is waited on by every call before it answers.
	hold chan struct{}
	// applied counts ReportStatus calls processed by node name.
	applied sync.Map // string -> *atomic.Int64
}

// appliedTimes is how many times the server processed ReportStatus for
// the node named.
func (b *benchServer) appliedTimes(node string) int64 {
	if n, ok := b.applied.Load(node); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// startDrain begins the server's drain and returns once it has begun
// (readiness fails); Shutdown's result arrives on the channel.
func (b *benchServer) startDrain(t *testing.T, within time.Duration) <-chan error {
	t.Helper()
	drained := make(chan error, 1)
	go func() { drained <- b.Server.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get(b.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, within, time.Millisecond)
	return drained
}

type serverOpt func(*framework.ServerConfig)

func startBench(t *testing.T, addr, version string, opts ...serverOpt) *benchServer {
	t.Helper()
	b := &benchServer{version: version}
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	c := benchContract(t, version)
	b.Running = frameworktest.StartServerAt(t, addr, cfg, func(s *framework.Server) {
		framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			b.entered.Add(1)
			if b.hold != nil {
				select {
				case <-b.hold:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			times, _ := b.applied.LoadOrStore(n.NodeName, new(atomic.Int64))
			times.(*atomic.Int64).Add(1)
			return &benchmsg.Ack{Accepted: true, Generation: b.handled.Add(1)}, nil
		})
		framework.HandleBatch(s, c, "ReportStatuses", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			if n.NodeName == "node-reject" {
				return nil, framework.Errorf(framework.CodeConflict, "node %s is cordoned", n.NodeName)
			}
			return &benchmsg.Ack{Accepted: true, Generation: b.handled.Add(1)}, nil
		})
	})
	return b
}

type clientOpt func(*framework.ClientConfig)

func benchClient(t *testing.T, version string, urls []string, opts ...clientOpt) *framework.Client {
	t.Helper()
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: urls,
		HandshakeWait: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	return frameworktest.NewClient(t, benchContract(t, version), cfg)
}

func report(ctx context.Context, c *framework.Client, n int, opts ...framework.CallOption) (*benchmsg.Ack, error) {
	return framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, c, "ReportStatus", benchmsg.Node(n), opts...)
}

func timeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// cuttable is an injectable transport that can be cut, as a network
// partition or a killed process would, and counts what passes.
type cuttable struct {
	next     http.RoundTripper
	cut      atomic.Bool
	requests atomic.Int64
	paths    sync.Map // path -> *atomic.Int64
}

func (c *cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut by test")
	}
	c.requests.Add(1)
	n, _ := c.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return c.next.RoundTrip(r)
}

func (c *cuttable) count(path string) int64 {
	if n, ok := c.paths.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// readyCount is how many of the client's endpoints hold a session.
func readyCount(cl *framework.Client) int {
	n := 0
	for _, e := range cl.Endpoints() {
		if e.State == "ready" {
			n++
		}
	}
	return n
}

// endpointState is the state of the client's endpoint at url, "" if none.
func endpointState(cl *framework.Client, url string) string {
	for _, e := range cl.Endpoints() {
		if e.URL == url {
			return e.State
		}
	}
	return ""
}

// endpointStateEventually waits for an endpoint to reach one of states and
// returns the first of states if it did, its last state if not.
func endpointStateEventually(t *testing.T, cl *framework.Client, url string, states ...string) string {
	t.Helper()
	reached := func() bool { return slices.Contains(states, endpointState(cl, url)) }
	if !assert.Eventually(t, reached, 5*time.Second, 5*time.Millisecond, "endpoint %s never %q", url, states) {
		return endpointState(cl, url)
	}
	return states[0]
}
