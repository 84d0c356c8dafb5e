package framework_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// TestRuntimeScenarios runs the runtime's behaviour stories in
// testdata/scenarios, in the style of etcd-io/raft's interaction tests:
// each file starts real servers and clients on 127.0.0.1, makes calls,
// replaces, drains and kills servers, and its expected output is what they
// answered. go test -run TestRuntimeScenarios -rewrite rewrites the
// expected output from what happens.
//
// Waits are for events that prove progress (an endpoint's state, a call
// counted as blocked, calls completed), bounded; time that matters to a
// story is on a fake clock that the story moves. Output names servers, not
// their random ports, and says only what every run sees alike.
//
// Commands (NAME a server or client, CALL an asynchronous call):
//
//	server NAME version=V [at=NAME] [hold]  start a nodecontroller serving bench V (at another's address; its handler holding calls)
//	stop NAME [async]                        drain and stop (async: start the drain, wait until it is draining; stopped NAME waits for the end)
//	release NAME                             let the held calls of NAME's handler go
//	client NAME version=V servers=A,B.. [changed] [fake-clock] [ready-timeout=D]
//	                                         a kubelet client (changed: the contract differs without a version bump)
//	wait NAME ready=N | NAME endpoint=S state=X[,Y]  wait until N endpoints are ready, or S's endpoint is in one of the states
//	call NAME [n=I] [failfast] [async=CALL]  call ReportStatus (async: without waiting for the answer)
//	blocked NAME n=N | NAME burst=B          wait until N calls (or every unanswered call of burst B) of NAME are blocked; check the async calls are all pending
//	await CALL                               the async call's answer
//	advance NAME by=D until=CALL atleast=D   move NAME's fake clock by D at a time until CALL ends, not before atleast
//	entered NAME n=N                         wait until N calls reached NAME's handler
//	load NAME callers=N                      start N callers calling in a loop; load-wait n=N waits for N more answers; load-stop ends it
//	burst NAME calls=N name=B [callers=C]    start N calls, all at once or C at a time; burst-wait B waits for their answers
//	handled NAME[+NAME..][>0]..              calls handled by each server or sum of servers (>0: that there were some)
//	handled-once B NAME[+NAME..]             every call of burst B was processed exactly once by the servers together
func TestRuntimeScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		t.Parallel()
		s := &scenario{t: t, servers: map[string]*benchServer{}, clients: map[string]*scenarioClient{},
			calls: map[string]chan callResult{}, fingerprints: map[string]string{},
			bursts: map[string]*scenarioLoad{}, stopping: map[string]chan error{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

// hang bounds every wait of a story: long enough that only a hang
// reaches it on a loaded machine (a drain story took 19s beside 16 CPU
// hogs), since what a story asserts never depends on how long a wait
// took. Time that matters to a story is on a fake clock.
const hang = 2 * time.Minute

// stopServer drains and stops srv, bounded by hang rather than by
// frameworktest's 10s: a drain waits for the calls under way, which a
// loaded machine answers slowly.
func stopServer(srv *benchServer) error {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	return errors.Join(srv.Server.Shutdown(ctx), srv.Stop())
}

type scenario struct {
	t       *testing.T
	servers map[string]*benchServer
	order   []string // server names in the order started
	clients map[string]*scenarioClient
	calls   map[string]chan callResult
	// fingerprints names the fingerprints of the contracts in use.
	fingerprints map[string]string
	load         *scenarioLoad
	bursts       map[string]*scenarioLoad
	stopping     map[string]chan error // async stops' outcomes
}

type scenarioClient struct {
	*framework.Client
	clock *clockwork.FakeClock // nil: the real clock
	async []string             // names of calls made with async=
}

type callResult struct {
	ack *benchmsg.Ack
	err error
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "server":
		return s.server(t, d)
	case "stop":
		srv := s.serverArg(t, d)
		if !d.HasArg("async") {
			require.NoError(t, stopServer(srv))
			return fmt.Sprintf("%s drained and stopped", d.CmdArgs[0].Key)
		}
		stopped := make(chan error, 1)
		s.stopping[d.CmdArgs[0].Key] = stopped
		go func() { stopped <- stopServer(srv) }()
		require.Eventually(t, srv.Server.Draining, hang, time.Millisecond)
		return fmt.Sprintf("%s draining", d.CmdArgs[0].Key)
	case "stopped":
		select {
		case err := <-s.stopping[d.CmdArgs[0].Key]:
			require.NoError(t, err)
			return fmt.Sprintf("%s stopped", d.CmdArgs[0].Key)
		case <-time.After(hang):
			t.Fatalf("%s did not stop within %v", d.CmdArgs[0].Key, hang)
			return ""
		}
	case "release":
		close(s.serverArg(t, d).hold)
		return "released"
	case "client":
		return s.client(t, d)
	case "wait":
		return s.wait(t, d)
	case "call":
		return s.call(t, d)
	case "blocked":
		c := s.clientArg(t, d)
		var n int
		var burst string
		if d.MaybeScanArgs(t, "burst", &burst) {
			b := s.bursts[burst]
			require.Eventually(t, func() bool {
				return c.Status().Blocked == b.calls-int(b.ok.Load()+b.failed.Load())
			}, hang, time.Millisecond, "every unanswered call of %s blocked", burst)
			return fmt.Sprintf("every unanswered call of %s is blocked", burst)
		}
		d.ScanArgs(t, "n", &n)
		require.Eventually(t, func() bool { return c.Status().Blocked == n }, hang, time.Millisecond,
			"%d calls blocked", n)
		var out []string
		for _, name := range c.async {
			select {
			case r := <-s.calls[name]:
				t.Fatalf("%s returned while blocked: %s", name, s.result(r))
			default:
				out = append(out, name+" pending")
			}
		}
		return fmt.Sprintf("%d blocked: %s", n, strings.Join(out, ", "))
	case "await":
		name := d.CmdArgs[0].Key
		select {
		case r := <-s.calls[name]:
			return s.result(r)
		case <-time.After(hang):
			t.Fatalf("%s did not end within %v", name, hang)
			return ""
		}
	case "advance":
		return s.advance(t, d)
	case "entered":
		srv := s.serverArg(t, d)
		var n int64
		d.ScanArgs(t, "n", &n)
		require.Eventually(t, func() bool { return srv.entered.Load() >= n }, hang, time.Millisecond)
		return fmt.Sprintf("%d or more calls reached %s's handler", n, d.CmdArgs[0].Key)
	case "load":
		var callers int
		d.ScanArgs(t, "callers", &callers)
		s.load = startScenarioLoad(t, s.clientArg(t, d).Client, callers, 0, 999_000_000)
		return fmt.Sprintf("%d callers", callers)
	case "load-wait":
		var n int64
		d.ScanArgs(t, "n", &n)
		from := s.load.ok.Load()
		require.Eventually(t, func() bool { return s.load.ok.Load() >= from+n || s.load.failed.Load() > 0 }, hang, time.Millisecond)
		require.Zero(t, s.load.failed.Load(), "calls failed: %v", s.load.errs())
		return fmt.Sprintf("%d more calls answered", n)
	case "load-stop":
		return s.load.stop()
	case "burst":
		var calls int
		var name string
		d.ScanArgs(t, "calls", &calls)
		d.ScanArgs(t, "name", &name)
		callers := calls
		d.MaybeScanArgs(t, "callers", &callers)
		require.Zero(t, calls%callers, "calls=%d in rounds of callers=%d", calls, callers)
		b := startScenarioLoad(t, s.clientArg(t, d).Client, callers, calls/callers, len(s.bursts)*1_000_000)
		s.bursts[name] = b
		if callers == calls {
			return fmt.Sprintf("%d calls", calls)
		}
		return fmt.Sprintf("%d calls by %d callers", calls, callers)
	case "burst-wait":
		return s.bursts[d.CmdArgs[0].Key].wait()
	case "handled-once":
		return s.handledOnce(t, d)
	case "handled":
		var out []string
		for _, arg := range d.CmdArgs {
			names, some := strings.CutSuffix(arg.Key, ">0")
			var n int64
			for _, name := range strings.Split(names, "+") {
				n += s.servers[name].handled.Load()
			}
			if some && n > 0 {
				out = append(out, arg.Key)
			} else {
				out = append(out, fmt.Sprintf("%s=%d", names, n))
			}
		}
		return strings.Join(out, " ")
	default:
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	}
}

func (s *scenario) server(t *testing.T, d *datadriven.TestData) string {
	name := d.CmdArgs[0].Key
	var version, at string
	d.ScanArgs(t, "version", &version)
	addr := "127.0.0.1:0"
	if d.MaybeScanArgs(t, "at", &at) {
		addr = s.servers[at].Addr
	}
	// A session lives 30s without a heartbeat (startBench's 2s lapses when
	// a loaded machine starves the client, and its endpoint leaves the
	// story); heartbeats, and so the drain's pace, stay startBench's.
	srv := startBench(t, addr, version, func(c *framework.ServerConfig) { c.SessionTTL = 30 * time.Second })
	if d.HasArg("hold") {
		srv.hold = make(chan struct{})
	}
	s.servers[name] = srv
	s.order = append(s.order, name)
	return fmt.Sprintf("%s serves bench %s", name, version)
}

func (s *scenario) client(t *testing.T, d *datadriven.TestData) string {
	name := d.CmdArgs[0].Key
	var version, servers, readyTimeout string
	d.ScanArgs(t, "version", &version)
	d.ScanArgs(t, "servers", &servers)
	var urls []string
	for _, n := range strings.Split(servers, ",") {
		urls = append(urls, s.servers[n].URL)
	}
	c := &scenarioClient{}
	cfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: urls, HandshakeWait: 5 * time.Second}
	if d.HasArg("fake-clock") {
		c.clock = clockwork.NewFakeClock()
		cfg.Clock = c.clock
	}
	if d.MaybeScanArgs(t, "ready-timeout", &readyTimeout) {
		var err error
		cfg.ReadyTimeout, err = time.ParseDuration(readyTimeout)
		require.NoError(t, err)
	}
	contract := benchContract(t, version)
	if d.HasArg("changed") {
		model := benchmsg.Contract(version)
		model.Methods["Extra"] = model.Methods["ReportStatus"] // a change without a version bump
		var err error
		contract, err = framework.NewContract(model)
		require.NoError(t, err)
	}
	what := "bench " + version
	if d.HasArg("changed") {
		what += " changed"
	}
	s.fingerprints[contract.Fingerprint()] = what
	s.fingerprints[benchContract(t, version).Fingerprint()] = "bench " + version
	c.Client = frameworktest.NewClient(t, contract, cfg)
	s.clients[name] = c
	return fmt.Sprintf("%s speaks %s to %s", name, what, servers)
}

func (s *scenario) wait(t *testing.T, d *datadriven.TestData) string {
	c := s.clientArg(t, d)
	var ready int
	if d.MaybeScanArgs(t, "ready", &ready) {
		require.Eventually(t, func() bool { return readyCount(c.Client) == ready }, hang, time.Millisecond,
			"%d endpoints ready: %+v", ready, c.Endpoints())
		return fmt.Sprintf("%d ready", ready)
	}
	var server, states string
	d.ScanArgs(t, "endpoint", &server)
	d.ScanArgs(t, "state", &states)
	want := strings.Split(states, ",")
	url := s.servers[server].URL
	require.Eventually(t, func() bool { return slices.Contains(want, endpointState(c.Client, url)) }, hang, time.Millisecond,
		"endpoint %s in %q: %+v", server, want, c.Endpoints())
	return fmt.Sprintf("%s is %s", server, states)
}

func (s *scenario) call(t *testing.T, d *datadriven.TestData) string {
	c := s.clientArg(t, d)
	n := 1
	d.MaybeScanArgs(t, "n", &n)
	var opts []framework.CallOption
	if d.HasArg("failfast") {
		opts = append(opts, framework.FailFast())
	}
	var async string
	if d.MaybeScanArgs(t, "async", &async) {
		done := make(chan callResult, 1)
		s.calls[async] = done
		c.async = append(c.async, async)
		go func() {
			ack, err := report(timeout(t, hang), c.Client, n, opts...)
			done <- callResult{ack, err}
		}()
		return async + " started"
	}
	ack, err := report(timeout(t, hang), c.Client, n, opts...)
	return s.result(callResult{ack, err})
}

// advance moves a client's fake clock a step at a time until an
// asynchronous call ends, letting the client react between steps. The
// call's timer may start a step late, and the call may be seen ending a
// step or two after it did, so what the story states is a lower bound
// (atleast=D): the call did not end before the clock had moved that far.
func (s *scenario) advance(t *testing.T, d *datadriven.TestData) string {
	c := s.clientArg(t, d)
	var by, until, atleast string
	d.ScanArgs(t, "by", &by)
	d.ScanArgs(t, "until", &until)
	d.ScanArgs(t, "atleast", &atleast)
	step, err := time.ParseDuration(by)
	require.NoError(t, err)
	bound, err := time.ParseDuration(atleast)
	require.NoError(t, err)
	var r callResult
	var moved time.Duration
	require.Eventually(t, func() bool {
		select {
		case r = <-s.calls[until]:
			return true
		default:
		}
		c.clock.Advance(step)
		moved += step
		return false
	}, hang, 5*time.Millisecond, "%s ends as %s's clock moves", until, d.CmdArgs[0].Key)
	require.GreaterOrEqual(t, moved, bound, "%s ended after %v on the client's clock", until, moved)
	return fmt.Sprintf("%s ended, not before %v on the client's clock: %s", until, bound, s.result(r))
}

func (s *scenario) result(r callResult) string {
	if r.err != nil {
		code := string(framework.CodeOf(r.err))
		return "error " + code + ": " + strings.TrimPrefix(s.names(r.err.Error()), code+": ")
	}
	return fmt.Sprintf("ok accepted=%v generation=%d", r.ack.Accepted, r.ack.Generation)
}

// names replaces the servers' URLs by their names (a/b for servers that
// took the same address) and the contracts' fingerprints by what they are
// the fingerprint of, so stories do not change with ports or schemas.
func (s *scenario) names(msg string) string {
	for _, name := range s.order {
		msg = strings.ReplaceAll(msg, s.servers[name].URL, "<"+s.addrName(s.servers[name].URL)+">")
	}
	for fp, what := range s.fingerprints {
		msg = strings.ReplaceAll(msg, fp, "<"+what+">")
	}
	return msg
}

func (s *scenario) addrName(url string) string {
	var names []string
	for _, name := range s.order {
		if s.servers[name].URL == url {
			names = append(names, name)
		}
	}
	return strings.Join(names, "/")
}

// handledOnce checks that every call of a burst was processed exactly
// once by the servers named together: none lost, none applied twice (a
// resend of a call that had been processed).
func (s *scenario) handledOnce(t *testing.T, d *datadriven.TestData) string {
	b := s.bursts[d.CmdArgs[0].Key]
	servers := strings.Split(d.CmdArgs[1].Key, "+")
	var wrong []string
	for _, node := range b.nodes {
		var n int64
		for _, name := range servers {
			n += s.servers[name].appliedTimes(node)
		}
		if n != 1 {
			wrong = append(wrong, fmt.Sprintf("%s %d times", node, n))
		}
	}
	if len(wrong) > 0 {
		return fmt.Sprintf("%d of %d calls not processed once: %s", len(wrong), len(b.nodes), strings.Join(wrong, ", "))
	}
	return fmt.Sprintf("each of the %d calls processed once by %s", len(b.nodes), d.CmdArgs[1].Key)
}

func (s *scenario) serverArg(t *testing.T, d *datadriven.TestData) *benchServer {
	srv, ok := s.servers[d.CmdArgs[0].Key]
	require.True(t, ok, "no server %q", d.CmdArgs[0].Key)
	return srv
}

func (s *scenario) clientArg(t *testing.T, d *datadriven.TestData) *scenarioClient {
	c, ok := s.clients[d.CmdArgs[0].Key]
	require.True(t, ok, "no client %q", d.CmdArgs[0].Key)
	return c
}

// scenarioLoad is callers calling ReportStatus: in a loop until stopped,
// or each once (rounds=1).
type scenarioLoad struct {
	t          *testing.T
	calls      int      // of a burst
	nodes      []string // the node each call of a burst reports
	ok, failed atomic.Int64
	stopCh     chan struct{}
	wg         sync.WaitGroup
	mu         sync.Mutex
	failures   []error
}

// startScenarioLoad starts the callers; call i of caller w reports node
// base+w*1000+i, so that each call of a burst names its own node.
func startScenarioLoad(t *testing.T, c *framework.Client, callers, rounds, base int) *scenarioLoad {
	l := &scenarioLoad{t: t, calls: callers * rounds, stopCh: make(chan struct{})}
	for w := range callers {
		for i := range rounds {
			l.nodes = append(l.nodes, benchmsg.Node(base+w*1000+i).NodeName)
		}
	}
	ctx := timeout(t, hang)
	for w := range callers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; rounds == 0 || i < rounds; i++ {
				select {
				case <-l.stopCh:
					return
				default:
				}
				if _, err := report(ctx, c, base+w*1000+i); err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					l.failures = append(l.failures, err)
					l.mu.Unlock()
					return
				}
				l.ok.Add(1)
			}
		}()
	}
	return l
}

func (l *scenarioLoad) errs() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failures)
}

// stop ends the load and says how it went.
func (l *scenarioLoad) stop() string {
	close(l.stopCh)
	return l.wait()
}

// wait waits until every caller is done and says how it went.
func (l *scenarioLoad) wait() string {
	l.wg.Wait()
	if f := l.failed.Load(); f > 0 {
		return fmt.Sprintf("%d calls failed: %v", f, l.errs())
	}
	if l.calls > 0 {
		return fmt.Sprintf("all %d answered", l.ok.Load())
	}
	return "no call failed"
}
