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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
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
	quiet := slog.New(slog.DiscardHandler)
	c, err := framework.NewContract(topicmsg.Contract("1.0.0"))
	if err != nil {
		return res, err
	}
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", Logger: quiet,
		SessionTTL: 30 * time.Second,
		Limits:     framework.Limits{WatchersPerSession: cfg.Watchers, WatchersPerPeer: cfg.Watchers + 10}})
	if err != nil {
		return res, err
	}
	pods := framework.ServeTopic[topicmsg.Assignment](srv, c, topicmsg.TopicAssignment,
		framework.WithMaxWatchers(cfg.Watchers+10), framework.WithMaxWatchersPerPeer(cfg.Watchers+10), framework.WithMaxKeys(cfg.Objects+10))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	tr := framework.NewTransport(nil)
	var clients []*framework.Client
	defer func() {
		for _, w := range res.watchers {
			w.inf.Stop()
		}
		for _, cl := range clients {
			_ = cl.Close()
		}
		tr.CloseIdleConnections()
		err = errors.Join(err, srv.Close())
		if serveErr := <-served; serveErr != nil && !errors.Is(serveErr, net.ErrClosed) {
			err = errors.Join(err, serveErr)
		}
	}()

	start := time.Now()
	nodeOf := make([]int, cfg.Objects)
	padding := strings.Repeat("x", cfg.Padding)
	for i := range cfg.Objects {
		nodeOf[i] = i % cfg.Watchers
		if err := pods.Set(&topicmsg.Assignment{UID: podName(i), Node: nodeName(nodeOf[i]), Phase: "Pending", Padding: padding}); err != nil {
			return res, err
		}
	}
	var (
		deliveries, outside atomic.Int64
		recording           atomic.Bool
		expected            int64 // set before recording starts
		arrived             = make(chan struct{})
		arrivedOnce         sync.Once
		latMu               sync.Mutex
		latencies           = make([]time.Duration, 0, cfg.Changes)
	)
	perClient := (cfg.Watchers + cfg.Clients - 1) / cfg.Clients
	var cl *framework.Client
	for n := range cfg.Watchers {
		if n%perClient == 0 {
			cl, err = framework.NewClient(c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Instance: fmt.Sprintf("kubelets-%03d", len(clients)), Endpoints: []string{"http://" + l.Addr().String()},
				Transport: tr, Logger: quiet})
			if err != nil {
				return res, err
			}
			clients = append(clients, cl)
		}
		w := &watcher{node: nodeName(n)}
		seen := func(kind, key string, obj *topicmsg.Assignment) {
			if !recording.Load() {
				return
			}
			if deliveries.Add(1) == expected {
				arrivedOnce.Do(func() { close(arrived) })
			}
			if obj != nil {
				if !cfg.Unselected && obj.Node != w.node {
					outside.Add(1)
				}
				if obj.Stamp != 0 {
					d := time.Duration(time.Now().UnixNano() - obj.Stamp)
					latMu.Lock()
					latencies = append(latencies, d)
					latMu.Unlock()
				}
			}
			if cfg.Check {
				w.mu.Lock()
				w.events = append(w.events, kind+" "+key)
				w.mu.Unlock()
			}
		}
		h := framework.InformerHandlers[topicmsg.Assignment]{
			OnAdd: func(key string, obj *topicmsg.Assignment) {
				if !recording.Load() && !cfg.Unselected && obj.Node != w.node {
					outside.Add(1) // a snapshot's object of another node
				}
				seen("add", key, obj)
			},
			OnUpdate: func(key string, _, obj *topicmsg.Assignment) { seen("update", key, obj) },
			OnDelete: func(key string, _ *topicmsg.Assignment) { seen("delete", key, nil) },
		}
		var opts []framework.WatchOption
		if !cfg.Unselected {
			opts = append(opts, framework.Select("node", w.node))
		}
		if w.inf, err = framework.Watch(ctx, cl, topicmsg.TopicAssignment, h, opts...); err != nil {
			return res, err
		}
		res.watchers = append(res.watchers, w)
	}
	res.SnapshotMin = cfg.Objects + 1
	for _, w := range res.watchers {
		if err := w.inf.WaitForSync(ctx); err != nil {
			return res, fmt.Errorf("selectrun: %s did not sync: %w", w.node, err)
		}
		w.snapshot = w.inf.Len()
		res.SnapshotMin, res.SnapshotMax = min(res.SnapshotMin, w.snapshot), max(res.SnapshotMax, w.snapshot)
	}
	res.Setup = time.Since(start)

	// The plan: who must see what.
	byNode := func(n int) *watcher { return res.watchers[n] }
	for j := range cfg.Changes {
		i := j % cfg.Objects
		from := nodeOf[i]
		to := from
		if cfg.RebindEvery > 0 && j%cfg.RebindEvery == cfg.RebindEvery-1 {
			to = (from + 1) % cfg.Watchers
		}
		nodeOf[i] = to
		key := podName(i)
		switch {
		case cfg.Unselected:
			expected += int64(cfg.Watchers)
			if cfg.Check {
				for _, w := range res.watchers {
					w.want = append(w.want, "update "+key)
				}
			}
		case from == to:
			expected++
			if cfg.Check {
				byNode(to).want = append(byNode(to).want, "update "+key)
			}
		default:
			expected += 2
			if cfg.Check {
				byNode(from).want = append(byNode(from).want, "delete "+key)
				byNode(to).want = append(byNode(to).want, "add "+key)
			}
		}
	}
	res.Expected = expected
	// Restore the starting nodes: the plan is replayed below.
	for i := range nodeOf {
		nodeOf[i] = i % cfg.Watchers
	}

	window := time.Duration(cfg.Changes) * time.Second / time.Duration(cfg.Rate)
	if cfg.MeasureIdle {
		idle := benchrun.StartCPU()
		select {
		case <-time.After(window):
		case <-ctx.Done():
			return res, ctx.Err()
		}
		res.IdleCPU, res.idleWindow = idle.Used(), window
	}

	recording.Store(true)
	cpu := benchrun.StartCPU()
	first := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for j := 0; j < cfg.Changes; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		due := min(cfg.Changes, int(time.Since(first).Seconds()*float64(cfg.Rate))+1)
		for ; j < due; j++ {
			i := j % cfg.Objects
			if cfg.RebindEvery > 0 && j%cfg.RebindEvery == cfg.RebindEvery-1 {
				nodeOf[i] = (nodeOf[i] + 1) % cfg.Watchers
			}
			if err := pods.Set(&topicmsg.Assignment{UID: podName(i), Node: nodeName(nodeOf[i]), Phase: "Running",
				Gen: int64(j + 1), Stamp: time.Now().UnixNano(), Padding: padding}); err != nil {
				return res, err
			}
		}
	}
	// Every delivery has arrived when the count is reached; the wait is
	// bounded, since a coalesced change is one delivery fewer.
	late := time.NewTimer(time.Minute)
	defer late.Stop()
	select {
	case <-arrived:
	case <-late.C:
	case <-ctx.Done():
	}
	res.Wall = time.Since(first)
	res.CPU = cpu.Used()
	recording.Store(false)
	res.Deliveries, res.Outside = deliveries.Load(), outside.Load()
	latMu.Lock()
	res.Latencies = slices.Clone(latencies)
	latMu.Unlock()
	slices.Sort(res.Latencies)

	res.share = map[string]map[string]bool{}
	for i, n := range nodeOf {
		node := nodeName(n)
		if res.share[node] == nil {
			res.share[node] = map[string]bool{}
		}
		res.share[node][podName(i)] = true
	}
	return res, nil
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
