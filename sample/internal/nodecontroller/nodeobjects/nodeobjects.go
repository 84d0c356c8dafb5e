// Package nodeobjects persists the user-visible subset of what the node
// controller knows of each node to a Kubernetes API server, as Node
// objects: it creates each node's object once, writes its Ready condition
// when it changes (Ready, NotReady, Unknown), and refreshes every node's
// conditions at most every RefreshEvery, so that `kubectl get nodes` tells
// the truth, while heartbeats (the kubelets' sessions) and full statuses
// stay in the node controller's memory. Every write, of whatever kind,
// comes out of one budget of MaxWritesPerSecond: a burst of transitions (a
// rack losing power) is written as fast as the budget allows, transitions
// first, and never turns into a burst of durable writes.
//
// The write rate this buys, for N nodes with t Ready transitions per
// second: creates once, then t + N/RefreshEvery writes per second; 5,000
// nodes refreshed every 5 minutes make 16.7 writes per second, against
// 500 Lease renewals per second (every 10 s) and the NodeStatus updates
// (on change, at least every 5 minutes) of Kubernetes' own path. See
// docs/design.md.
package nodeobjects

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

// Defaults of [Config].
const (
	// DefaultRefreshEvery is how often each Node object is rewritten
	// unchanged: the kubelet's own default for reporting an unchanged
	// NodeStatus (nodeStatusReportFrequency).
	DefaultRefreshEvery = 5 * time.Minute
	// DefaultMaxWritesPerSecond bounds every write to the API server.
	DefaultMaxWritesPerSecond = 50
	// DefaultWorkers is how many writes may be in flight at once.
	DefaultWorkers = 4
)

// Config configures a [Writer].
type Config struct {
	// Nodes is the API server's Node client (required).
	Nodes corev1client.NodeInterface
	// RefreshEvery is how often each node's object is rewritten when
	// nothing changed (its conditions' lastHeartbeatTime moves on);
	// default DefaultRefreshEvery. Each node's first refresh comes at a
	// random point between a half and the whole of it after its creation,
	// so that nodes created together are refreshed spread out.
	RefreshEvery time.Duration
	// MaxWritesPerSecond bounds the writes of every kind together, with
	// bursts of at most a second's worth; default DefaultMaxWritesPerSecond.
	MaxWritesPerSecond float64
	// SpreadFromStart puts each node's first refresh at a uniformly random
	// point of the whole first period instead of its second half, so that
	// from the first minute on the refreshes arrive at their steady rate of
	// N/RefreshEvery per second: a measurement of that rate over a window
	// shorter than the period then reads it. The default leaves an object
	// just created alone for half a period.
	SpreadFromStart bool
	// Workers is how many writes may be in flight at once; default
	// DefaultWorkers.
	Workers int
	// WriteTimeout bounds each write; default 10s.
	WriteTimeout time.Duration
	// Clock paces the refresh and the budget; default the real clock.
	Clock clockwork.Clock
	// Logger receives its logs; default slog.Default().
	Logger *slog.Logger
}

// Writer persists the nodes' user-visible subset; see the package
// documentation.
type Writer struct {
	cfg    Config
	logger *slog.Logger

	mu      sync.Mutex
	entries map[string]*entry
	// dirty are the nodes whose object is not created yet or whose Ready
	// condition differs from the one written, to write before any refresh.
	dirty map[string]bool
	// due holds the created nodes by when their refresh is due, the
	// earliest first, so that picking the refreshes due costs their
	// number, not a look at every node. An item whose node's refreshAt
	// moved since (a write rescheduled it) is stale, and dropped when it
	// comes up.
	due  refreshHeap
	wake chan struct{}
	rand *mathrand.Rand

	stats Stats
}

// entry is what the writer keeps of one node: its last health (shared with
// the node controller, never modified) and what it wrote.
type entry struct {
	health *nhv2.NodeHealth
	// created: its object exists; ready is the Ready status last written
	// ("" before the first), transition when the Ready status observed
	// last changed, refreshAt when it is next rewritten unchanged.
	created    bool
	ready      nhv2.NodeConditionStatus
	observed   nhv2.NodeConditionStatus
	transition time.Time
	refreshAt  time.Time
	busy       bool
}

// Stats counts the writes made, by kind.
type Stats struct {
	// Creates are Node objects created; Transitions, status writes of a
	// changed Ready condition; Refreshes, status writes of an unchanged
	// one; Failures, writes that failed (and are made again).
	Creates, Transitions, Refreshes, Failures atomic.Int64
	// WriteTime is the time spent in writes, summed over them: with the
	// count of writes it gives their mean latency, and so how many writes
	// a second Config.Workers can make at most.
	WriteTime atomic.Int64 // nanoseconds
}

// New returns a writer; [Writer.Run] makes its writes.
func New(cfg Config) (*Writer, error) {
	if cfg.Nodes == nil {
		return nil, fmt.Errorf("nodeobjects: no Node client")
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.MaxWritesPerSecond <= 0 {
		cfg.MaxWritesPerSecond = DefaultMaxWritesPerSecond
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Writer{cfg: cfg, logger: cfg.Logger, entries: map[string]*entry{}, dirty: map[string]bool{},
		wake: make(chan struct{}, 1), rand: mathrand.New(mathrand.NewPCG(uint64(time.Now().UnixNano()), 43))}, nil
}

// Stats returns the writer's counters.
func (w *Writer) Stats() *Stats { return &w.stats }

// Observe takes a node's health as the node controller published it; it
// never blocks (the node controller calls it under its lock) and keeps only
// the latest. h must not be modified afterwards.
func (w *Writer) Observe(h *nhv2.NodeHealth) {
	ready := readyOf(h)
	w.mu.Lock()
	e := w.entries[h.NodeName]
	if e == nil {
		e = &entry{}
		w.entries[h.NodeName] = e
	}
	e.health = h
	if ready != e.observed {
		e.observed, e.transition = ready, w.cfg.Clock.Now()
	}
	dirty := !e.created || ready != e.ready
	if dirty {
		w.dirty[h.NodeName] = true
	}
	w.mu.Unlock()
	// Only a write to make wakes the writer: a change the Node object
	// does not show (a pod bound, every binding changes its node's
	// health) would make it look for due refreshes among every node.
	if dirty {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// readyOf is a node's Ready condition's status, Unknown if it has none.
func readyOf(h *nhv2.NodeHealth) nhv2.NodeConditionStatus {
	for _, c := range h.Conditions {
		if c.Type == nhv2.NodeConditionTypeReady {
			return c.Status
		}
	}
	return nhv2.NodeConditionStatusUnknown
}

// Pending returns how many nodes have a create or a transition not yet
// written.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirty)
}

// Run makes the writes until ctx ends: the dirty nodes first (creates,
// then transitions), then the refreshes due, oldest first, all within the
// budget.
func (w *Writer) Run(ctx context.Context) {
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range w.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				w.write(ctx, name)
			}
		}()
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	// The budget is a token bucket holding at most a second's writes,
	// filled as the clock moves on; the loop looks again every tick.
	const tick = 100 * time.Millisecond
	ticker := w.cfg.Clock.NewTicker(tick)
	defer ticker.Stop()
	tokens, last := w.cfg.MaxWritesPerSecond, w.cfg.Clock.Now()
	for {
		now := w.cfg.Clock.Now()
		tokens = min(w.cfg.MaxWritesPerSecond, tokens+now.Sub(last).Seconds()*w.cfg.MaxWritesPerSecond)
		last = now
		for _, name := range w.next(int(tokens), now) {
			select {
			case jobs <- name:
				tokens--
			case <-ctx.Done():
				w.release(name)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.Chan():
		case <-w.wake:
			if tokens < 1 {
				// Nothing to spend: the next tick will have some.
				select {
				case <-ctx.Done():
					return
				case <-ticker.Chan():
				}
			}
		}
	}
}

// next picks at most n nodes to write now and marks them busy: dirty ones
// first, then those whose refresh is due.
func (w *Writer) next(n int, now time.Time) []string {
	if n <= 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	// Creates before transitions: a transition of a node without an
	// object has nothing to change.
	for _, creates := range []bool{true, false} {
		for name := range w.dirty {
			e := w.entries[name]
			if len(out) == n {
				return out
			}
			if e.busy || e.created == creates {
				continue
			}
			e.busy = true
			out = append(out, name)
		}
	}
	for len(out) < n && len(w.due) > 0 && !w.due[0].at.After(now) {
		it := heap.Pop(&w.due).(refreshItem)
		e := w.entries[it.name]
		if !e.created || !e.refreshAt.Equal(it.at) {
			continue // stale: a later item holds its refresh
		}
		if e.busy || w.dirty[it.name] {
			continue // a write under way, or due first, schedules its next refresh
		}
		e.busy = true
		out = append(out, it.name)
	}
	return out
}

func (w *Writer) release(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entries[name]
	e.busy = false
	if e.created {
		heap.Push(&w.due, refreshItem{at: e.refreshAt, name: name})
	}
}

// refreshItem is a node's refresh due at at.
type refreshItem struct {
	at   time.Time
	name string
}

// refreshHeap is a min-heap of refreshes by when they are due
// (container/heap).
type refreshHeap []refreshItem

func (h refreshHeap) Len() int           { return len(h) }
func (h refreshHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h refreshHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refreshHeap) Push(x any)        { *h = append(*h, x.(refreshItem)) }
func (h *refreshHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// write makes one node's write: a create, or a status patch of its
// conditions.
func (w *Writer) write(ctx context.Context, name string) {
	w.mu.Lock()
	e := w.entries[name]
	h, created, written, transition := e.health, e.created, e.ready, e.transition
	w.mu.Unlock()
	ready := readyOf(h)
	now := w.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, w.cfg.WriteTimeout)
	defer cancel()
	var err error
	kind := &w.stats.Refreshes
	switch {
	case !created:
		kind = &w.stats.Creates
		_, err = w.cfg.Nodes.Create(ctx, nodeObject(h, now, transition), metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			// Made before this writer started (the node controller
			// restarted): its status is written instead.
			err = w.patchStatus(ctx, h, now, transition)
		}
	default:
		if ready != written {
			kind = &w.stats.Transitions
		}
		err = w.patchStatus(ctx, h, now, transition)
	}
	w.stats.WriteTime.Add(int64(w.cfg.Clock.Since(now)))
	w.mu.Lock()
	defer w.mu.Unlock()
	e.busy = false
	if err != nil {
		w.stats.Failures.Add(1)
		w.logger.Warn("writing a Node object", "node", name, "err", err)
		if created {
			// A failed refresh or transition is made again after a
			// second, not at once: the API server may be the trouble.
			e.refreshAt = now.Add(time.Second)
			heap.Push(&w.due, refreshItem{at: e.refreshAt, name: name})
		}
		return
	}
	kind.Add(1)
	if !e.created {
		first := 0.5 + 0.5*w.rand.Float64()
		if w.cfg.SpreadFromStart {
			first = w.rand.Float64()
		}
		e.refreshAt = now.Add(time.Duration(float64(w.cfg.RefreshEvery) * first))
	} else {
		e.refreshAt = now.Add(w.cfg.RefreshEvery)
	}
	heap.Push(&w.due, refreshItem{at: e.refreshAt, name: name})
	e.created, e.ready = true, ready
	if e.health == h || readyOf(e.health) == ready {
		delete(w.dirty, name)
	}
}

// fieldManager names the writer in the objects' managed fields.
const fieldManager = "lockstep-nodecontroller"

// patchStatus writes a node's conditions (a strategic merge patch of the
// status subresource, merged by condition type).
func (w *Writer) patchStatus(ctx context.Context, h *nhv2.NodeHealth, now, transition time.Time) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions(h, now, transition)}})
	if err != nil {
		return err
	}
	_, err = w.cfg.Nodes.PatchStatus(ctx, h.NodeName, patch)
	return err
}

// conditions are a node's conditions as a Node object has them; the Ready
// condition's last transition is when the writer saw it change, and every
// condition was heard of now.
func conditions(h *nhv2.NodeHealth, now, transition time.Time) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(h.Conditions))
	for _, c := range h.Conditions {
		nc := corev1.NodeCondition{Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
		if c.Type == nhv2.NodeConditionTypeReady && !transition.IsZero() {
			nc.LastTransitionTime = metav1.NewTime(transition)
		}
		if c.Reason != nil {
			nc.Reason = *c.Reason
		}
		if c.Message != nil {
			nc.Message = *c.Message
		}
		out = append(out, nc)
	}
	return out
}

// nodeObject is a node's object as first created: its labels, taints,
// addresses, capacity, allocatable and conditions.
func nodeObject(h *nhv2.NodeHealth, now, transition time.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.NodeName, Labels: h.Labels}}
	for _, t := range h.Taints {
		ct := corev1.Taint{Key: t.Key, Effect: corev1.TaintEffect(t.Effect)}
		if t.Value != nil {
			ct.Value = *t.Value
		}
		n.Spec.Taints = append(n.Spec.Taints, ct)
	}
	for _, a := range h.Addresses {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	// The health's allocatable is what is left for new pods: the node's
	// own is that and what its pods requested.
	alloc := h.Allocatable
	for _, p := range h.Pods {
		alloc.CPUMillis += p.Requests.CPUMillis
		alloc.MemoryBytes += p.Requests.MemoryBytes
		alloc.Pods++
	}
	n.Status.Allocatable = resources(alloc)
	if h.Capacity != nil {
		n.Status.Capacity = resources(*h.Capacity)
	}
	n.Status.Conditions = conditions(h, now, transition)
	return n
}

func resources(r nhv2.Resources) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.CPUMillis, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(r.Pods, resource.DecimalSI),
	}
}
