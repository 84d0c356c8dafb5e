// Package selectrun runs the selected-watch scenario of topics: a pod
// assignment topic, one watcher per node selecting its node's pods (as each
// kubelet watches with fieldSelector=spec.nodeName), spread over a few
// clients, and a writer changing pods at a fixed rate, now and then
// rebinding one to another node. It measures what a change costs the
// process (CPU per change, net of an idle window of the same length),
// how long a change takes to reach its watcher, and what each watcher's
// snapshot held; with Check it records every watcher's events so that
// [Result.Verify] can tell whether each saw exactly its share.
//
// The framework's regular tests run it small (500 watchers over 5,000
// pods) with Check; the comparison suite (bench/) runs it at 5,000
// watchers over 500 to 150,000 pods, beside the anchor of a topic with one
// watcher. It lives outside internal/ so the bench module can import it;
// it is no API with compatibility promises.
package selectrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Config is one scenario.
type Config struct {
	// Watchers is how many watchers there are, one per node
	// (node-00000, …); Objects how many pods, pod i on node i%Watchers.
	Watchers, Objects int
	// Clients is how many client instances the watchers are spread over
	// (default: one per 100 watchers).
	Clients int
	// Unselected makes every watcher watch the whole topic: with one
	// watcher, the anchor a selected watch is compared with.
	Unselected bool
	// Rate is the changes per second (default 100); Changes how many
	// (default 1,000). Change j changes pod j%Objects.
	Rate, Changes int
	// RebindEvery makes every n-th change move its pod to the next node
	// (0: never).
	RebindEvery int
	// Padding is the bytes of padding each pod carries.
	Padding int
	// Check records every watcher's events for [Result.Verify].
	Check bool
	// MeasureIdle measures the process's CPU over an idle window as long
	// as the changes take, before them, so that CPU per change can be
	// given net of what idle watchers cost.
	MeasureIdle bool
	// Timeout bounds the whole run (default 5 minutes).
	Timeout time.Duration
}

func (c *Config) defaults() error {
	if c.Watchers < 1 || c.Objects < 1 {
		return errors.New("selectrun: needs at least one watcher and one object")
	}
	if c.Clients <= 0 {
		c.Clients = max(1, c.Watchers/100)
	}
	if c.Rate <= 0 {
		c.Rate = 100
	}
	if c.Changes <= 0 {
		c.Changes = 1000
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	return nil
}

// Result is what one run measured.
type Result struct {
	Config Config
	// Setup is how long writing the pods and syncing every watcher took.
	Setup time.Duration
	// SnapshotMin and SnapshotMax are the fewest and most objects a
	// watcher's snapshot held.
	SnapshotMin, SnapshotMax int
	// Wall is from the first change to the last delivery; CPU the
	// process's CPU meanwhile, IdleCPU its CPU over an idle window of the
	// same length before the changes (pings, heartbeats).
	Wall, CPU, IdleCPU time.Duration
	idleWindow         time.Duration
	// Deliveries is how many events the watchers' handlers saw during the
	// changes, Expected how many the changes call for.
	Deliveries, Expected int64
	// Latencies are the delivery latencies of every set delivered, from
	// the writer's Set to the watcher's handler, sorted.
	Latencies []time.Duration
	// Outside counts objects a watcher was handed that are not of its
	// selection.
	Outside int64

	watchers []*watcher
	share    map[string]map[string]bool // node → pods it holds at the end
}

// CPUPerChange is the process CPU per change, net of the idle window's
// CPU (scaled to the changes' wall time); without MeasureIdle, gross.
func (r Result) CPUPerChange() time.Duration {
	idle := time.Duration(0)
	if r.idleWindow > 0 {
		idle = time.Duration(float64(r.IdleCPU) * float64(r.Wall) / float64(r.idleWindow))
	}
	return max(0, r.CPU-idle) / time.Duration(r.Config.Changes)
}

// GrossCPUPerChange is the process CPU per change, idle costs included.
func (r Result) GrossCPUPerChange() time.Duration {
	return r.CPU / time.Duration(r.Config.Changes)
}

// Percentile returns the q-th delivery latency (0 < q ≤ 1).
func (r Result) Percentile(q float64) time.Duration { return benchrun.Percentile(r.Latencies, q) }

// watcher is one node's informer and what it saw.
type watcher struct {
	node     string
	inf      *framework.Informer[topicmsg.Assignment]
	snapshot int
	mu       sync.Mutex
	events   []string // with Check: "add p", "update p", "delete p" after the snapshot
	want     []string
}

// nodeName names node n.
func nodeName(n int) string { return fmt.Sprintf("node-%05d", n) }

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// Run runs one scenario.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res.Config = cfg
	r, err := start(cfg, &res)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.close()) }()

	begun := time.Now()
	if err := r.writePods(); err != nil {
		return res, err
	}
	if err := r.startWatchers(ctx); err != nil {
		return res, err
	}
	if err := r.waitSynced(ctx); err != nil {
		return res, err
	}
	res.Setup = time.Since(begun)
	r.plan()
	if cfg.MeasureIdle {
		if err := r.measureIdle(ctx); err != nil {
			return res, err
		}
	}
	if err := r.change(ctx); err != nil {
		return res, err
	}
	r.collect(ctx)
	return res, nil
}

// runner is one run's server, clients and tallies.
type runner struct {
	cfg     Config
	res     *Result
	quiet   *slog.Logger
	c       *framework.Contract
	srv     *framework.Server
	pods    *framework.TopicWriter[topicmsg.Assignment]
	l       net.Listener
	served  chan error
	tr      *http.Transport
	clients []*framework.Client
	// nodeOf is the node each pod is on: pod i on node i%Watchers at the
	// start.
	nodeOf  []int
	padding string

	// What the watchers' handlers count while recording (during the
	// changes).
	deliveries, outside atomic.Int64
	recording           atomic.Bool
	expected            int64 // set before recording starts
	arrived             chan struct{}
	arrivedOnce         sync.Once
	latMu               sync.Mutex
	latencies           []time.Duration
	first               time.Time // the first change
	cpu                 benchrun.CPU
}

// start starts the server with the pod topic on 127.0.0.1.
func start(cfg Config, res *Result) (*runner, error) {
	r := &runner{cfg: cfg, res: res, quiet: slog.New(slog.DiscardHandler), served: make(chan error, 1),
		nodeOf: make([]int, cfg.Objects), padding: strings.Repeat("x", cfg.Padding),
		arrived: make(chan struct{}), latencies: make([]time.Duration, 0, cfg.Changes)}
	var err error
	// The contract declares the Assignment topic alone: a server serves
	// every topic its contracts declare.
	m := topicmsg.Contract("1.0.0")
	m.Topics = map[string]handshake.Topic{topicmsg.TopicAssignment: m.Topics[topicmsg.TopicAssignment]}
	if r.c, err = framework.NewContract(m); err != nil {
		return nil, err
	}
	r.srv, err = framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: r.quiet,
		SessionTTL: 30 * time.Second,
		Limits:     framework.Limits{WatchersPerSession: cfg.Watchers, WatchersPerPeer: cfg.Watchers + 10}})
	if err != nil {
		return nil, err
	}
	r.pods = framework.ServeTopic[topicmsg.Assignment](r.srv, r.c, topicmsg.TopicAssignment,
		framework.WithMaxWatchers(cfg.Watchers+10), framework.WithMaxWatchersPerPeer(cfg.Watchers+10), framework.WithMaxKeys(cfg.Objects+10))
	if r.l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	go func() { r.served <- r.srv.Serve(r.l) }()
	r.tr = framework.NewTransport(nil)
	return r, nil
}

// close stops the watchers, closes the clients and the server, and
// returns what went wrong serving.
func (r *runner) close() error {
	for _, w := range r.res.watchers {
		w.inf.Stop()
	}
	for _, cl := range r.clients {
		_ = cl.Close()
	}
	r.tr.CloseIdleConnections()
	err := r.srv.Close()
	if serveErr := <-r.served; serveErr != nil && !errors.Is(serveErr, net.ErrClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// writePods writes every pod on its starting node.
func (r *runner) writePods() error {
	for i := range r.cfg.Objects {
		r.nodeOf[i] = i % r.cfg.Watchers
		if err := r.pods.Set(&topicmsg.Assignment{UID: podName(i), Node: nodeName(r.nodeOf[i]), Phase: "Pending", Padding: r.padding}); err != nil {
			return err
		}
	}
	return nil
}

// startWatchers starts one informer per node, spread over the clients, a
// new client for every perClient watchers.
func (r *runner) startWatchers(ctx context.Context) error {
	perClient := (r.cfg.Watchers + r.cfg.Clients - 1) / r.cfg.Clients
	var cl *framework.Client
	for n := range r.cfg.Watchers {
		if n%perClient == 0 {
			var err error
			cl, err = framework.NewClient(r.c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Instance: fmt.Sprintf("kubelets-%03d", len(r.clients)), Endpoints: []string{"http://" + r.l.Addr().String()},
				Transport: r.tr, Logger: r.quiet})
			if err != nil {
				return err
			}
			r.clients = append(r.clients, cl)
		}
		w := &watcher{node: nodeName(n)}
		h := framework.InformerHandlers[topicmsg.Assignment]{
			OnAdd: func(key string, obj *topicmsg.Assignment) {
				if !r.recording.Load() && !r.cfg.Unselected && obj.Node != w.node {
					r.outside.Add(1) // a snapshot's object of another node
				}
				r.seen(w, "add", key, obj)
			},
			OnUpdate: func(key string, _, obj *topicmsg.Assignment) { r.seen(w, "update", key, obj) },
			OnDelete: func(key string, _ *topicmsg.Assignment) { r.seen(w, "delete", key, nil) },
		}
		var opts []framework.WatchOption
		if !r.cfg.Unselected {
			opts = append(opts, framework.Select("node", w.node))
		}
		var err error
		if w.inf, err = framework.Watch(ctx, cl, topicmsg.TopicAssignment, h, opts...); err != nil {
			return err
		}
		r.res.watchers = append(r.res.watchers, w)
	}
	return nil
}

// seen counts an event of w's while recording: a delivery, an object of
// another node, a set's latency, and with Check the event itself.
func (r *runner) seen(w *watcher, kind, key string, obj *topicmsg.Assignment) {
	if !r.recording.Load() {
		return
	}
	if r.deliveries.Add(1) == r.expected {
		r.arrivedOnce.Do(func() { close(r.arrived) })
	}
	if obj != nil {
		if !r.cfg.Unselected && obj.Node != w.node {
			r.outside.Add(1)
		}
		if obj.Stamp != 0 {
			d := time.Duration(time.Now().UnixNano() - obj.Stamp)
			r.latMu.Lock()
			r.latencies = append(r.latencies, d)
			r.latMu.Unlock()
		}
	}
	if r.cfg.Check {
		w.mu.Lock()
		w.events = append(w.events, kind+" "+key)
		w.mu.Unlock()
	}
}

// waitSynced waits until every watcher has synced and notes the sizes of
// their snapshots.
func (r *runner) waitSynced(ctx context.Context) error {
	r.res.SnapshotMin = r.cfg.Objects + 1
	for _, w := range r.res.watchers {
		if err := w.inf.WaitForSync(ctx); err != nil {
			return fmt.Errorf("selectrun: %s did not sync: %w", w.node, err)
		}
		w.snapshot = w.inf.Len()
		r.res.SnapshotMin, r.res.SnapshotMax = min(r.res.SnapshotMin, w.snapshot), max(r.res.SnapshotMax, w.snapshot)
	}
	return nil
}

// plan works out who must see what: how many deliveries the changes call
// for and, with Check, each watcher's events. It leaves nodeOf as it
// found it, since [runner.change] replays the plan.
func (r *runner) plan() {
	byNode := func(n int) *watcher { return r.res.watchers[n] }
	for j := range r.cfg.Changes {
		i := j % r.cfg.Objects
		from := r.nodeOf[i]
		to := from
		if r.rebinds(j) {
			to = (from + 1) % r.cfg.Watchers
		}
		r.nodeOf[i] = to
		key := podName(i)
		switch {
		case r.cfg.Unselected:
			r.expected += int64(r.cfg.Watchers)
			if r.cfg.Check {
				for _, w := range r.res.watchers {
					w.want = append(w.want, "update "+key)
				}
			}
		case from == to:
			r.expected++
			if r.cfg.Check {
				byNode(to).want = append(byNode(to).want, "update "+key)
			}
		default:
			r.expected += 2
			if r.cfg.Check {
				byNode(from).want = append(byNode(from).want, "delete "+key)
				byNode(to).want = append(byNode(to).want, "add "+key)
			}
		}
	}
	r.res.Expected = r.expected
	for i := range r.nodeOf {
		r.nodeOf[i] = i % r.cfg.Watchers
	}
}

// rebinds reports whether change j moves its pod to the next node.
func (r *runner) rebinds(j int) bool {
	return r.cfg.RebindEvery > 0 && j%r.cfg.RebindEvery == r.cfg.RebindEvery-1
}

// measureIdle measures the process's CPU over an idle window as long as
// the changes will take.
func (r *runner) measureIdle(ctx context.Context) error {
	window := time.Duration(r.cfg.Changes) * time.Second / time.Duration(r.cfg.Rate)
	idle := benchrun.StartCPU()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	r.res.IdleCPU, r.res.idleWindow = idle.Used(), window
	return nil
}

// change makes the changes at the configured rate, recording what the
// watchers see.
func (r *runner) change(ctx context.Context) error {
	r.recording.Store(true)
	r.cpu = benchrun.StartCPU()
	r.first = time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for j := 0; j < r.cfg.Changes; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		due := min(r.cfg.Changes, int(time.Since(r.first).Seconds()*float64(r.cfg.Rate))+1)
		for ; j < due; j++ {
			i := j % r.cfg.Objects
			if r.rebinds(j) {
				r.nodeOf[i] = (r.nodeOf[i] + 1) % r.cfg.Watchers
			}
			if err := r.pods.Set(&topicmsg.Assignment{UID: podName(i), Node: nodeName(r.nodeOf[i]), Phase: "Running",
				Gen: int64(j + 1), Stamp: time.Now().UnixNano(), Padding: r.padding}); err != nil {
				return err
			}
		}
	}
	return nil
}

// collect waits for the deliveries and fills in what the changes cost
// and where each pod ended.
func (r *runner) collect(ctx context.Context) {
	// Every delivery has arrived when the count is reached; the wait is
	// bounded, since a coalesced change is one delivery fewer.
	late := time.NewTimer(time.Minute)
	defer late.Stop()
	select {
	case <-r.arrived:
	case <-late.C:
	case <-ctx.Done():
	}
	res := r.res
	res.Wall = time.Since(r.first)
	res.CPU = r.cpu.Used()
	r.recording.Store(false)
	res.Deliveries, res.Outside = r.deliveries.Load(), r.outside.Load()
	r.latMu.Lock()
	res.Latencies = slices.Clone(r.latencies)
	r.latMu.Unlock()
	slices.Sort(res.Latencies)

	res.share = map[string]map[string]bool{}
	for i, n := range r.nodeOf {
		node := nodeName(n)
		if res.share[node] == nil {
			res.share[node] = map[string]bool{}
		}
		res.share[node][podName(i)] = true
	}
}

// Verify reports, for a run with Check, every way a watcher's view was not
// exactly its share: objects of other nodes, a snapshot or a final cache
// other than its node's pods, events other than those the changes call
// for (in order).
func (r Result) Verify() error {
	var errs []error
	if r.Outside > 0 {
		errs = append(errs, fmt.Errorf("watchers were handed %d objects of other nodes", r.Outside))
	}
	if r.Deliveries != r.Expected {
		errs = append(errs, fmt.Errorf("%d deliveries, the changes call for %d", r.Deliveries, r.Expected))
	}
	for n, w := range r.watchers {
		want := r.Config.Objects / r.Config.Watchers
		if n < r.Config.Objects%r.Config.Watchers {
			want++
		}
		if r.Config.Unselected {
			want = r.Config.Objects
		}
		if w.snapshot != want {
			errs = append(errs, fmt.Errorf("%s: snapshot of %d objects, its share is %d", w.node, w.snapshot, want))
		}
		keys := w.inf.Keys()
		var share []string
		for k := range r.share[w.node] {
			share = append(share, k)
		}
		if r.Config.Unselected {
			share = share[:0]
			for _, pods := range r.share {
				for k := range pods {
					share = append(share, k)
				}
			}
		}
		slices.Sort(share)
		if !slices.Equal(keys, share) {
			errs = append(errs, fmt.Errorf("%s holds %d pods at the end, its share is %d", w.node, len(keys), len(share)))
		}
		if r.Config.Check {
			w.mu.Lock()
			if !slices.Equal(w.events, w.want) {
				errs = append(errs, fmt.Errorf("%s saw %v, the changes call for %v", w.node, head(w.events), head(w.want)))
			}
			w.mu.Unlock()
		}
		if len(errs) > 10 {
			errs = append(errs, errors.New("…"))
			break
		}
	}
	return errors.Join(errs...)
}

func head(s []string) []string {
	if len(s) > 8 {
		return append(slices.Clone(s[:8]), "…")
	}
	return s
}
