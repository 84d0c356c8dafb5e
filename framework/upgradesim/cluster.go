package upgradesim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// Cluster is one run of a plan: the replicas as they run, the faults in
// force, and the record of every call. Hooks, invariants and conditions
// receive it to look at the system or to call it.
type Cluster struct {
	sim  *Sim
	plan Plan // as prepared
	t0   time.Time
	ctx  context.Context
	stop context.CancelFunc

	replicas []*replica
	byName   map[string]*replica
	byAddr   map[string]*replica // host:port → replica; fixed after reservation

	step atomic.Int32

	mu           sync.Mutex
	faults       []*fault
	disturbances []disturbance
	calls        map[string]*callRecord
	callOrder    []*callRecord
	nextID       int
	stepAcked    int
	processedBy  map[string]int // component → calls its handlers were seen processing
	keyApplies   map[appliedKey]int
	keysApplied  map[appliedKey]bool
	reapplied    int
	doubles      []doubleApply
	started      int // incarnations started, to number them
	tearingDown  bool
	violations   []Violation
	perInvariant map[string]int
	suppressed   map[string]int
	windows      map[windowKey]*blockedWindow
	duringSeen   map[string]int // During invariant → last step it failed in
	tl           *recorder

	trafficStop chan struct{}
	loops       sync.WaitGroup // traffic loops and the sampler
}

type replicaState int

const (
	stateDown replicaState = iota
	stateUp
	stateDraining
)

// replica is one instance slot of a component: a fixed address, and the
// incarnation running there, if any.
type replica struct {
	comp  *Component
	index int
	name  string
	addr  string
	url   string
	// reserved holds the address from the start of the run until the first
	// incarnation serves on it.
	reserved net.Listener

	// guarded by Cluster.mu
	state replicaState
	inc   *incarnation
}

// incarnation is one process of a replica, from start to stop.
type incarnation struct {
	r         *replica
	vi        int
	version   *Version
	seq       int // its number among the run's incarnations, for histories
	env       *Env
	inst      *Instance
	transport *faultTransport
	// ctx carries the incarnation's traffic; it ends when it stops.
	ctx    context.Context
	cancel context.CancelFunc
	calls  sync.WaitGroup // its traffic calls in flight
	http   *http.Server   // when it serves a Handler
	served chan error     // Serve's result; nil when nothing is served
	// listener is closed again once Serve returns: a server stopped
	// before it began serving returns without closing it, and the address
	// would stay held.
	listener net.Listener
	// sessions is what its clients did to keep their sessions (history.go).
	sessions sessionLog
}

// Execute runs plan and returns its report; it does not need a test, and
// reports violations in the report rather than failing anything. The error
// is for plans that cannot run at all (see [Sim.Prepare]) and for
// addresses that cannot be had. Every replica is stopped before it
// returns.
func (s *Sim) Execute(ctx context.Context, plan Plan) (*Report, error) {
	prepared, err := s.Prepare(plan)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		sim: s, plan: prepared, byName: map[string]*replica{}, byAddr: map[string]*replica{},
		calls: map[string]*callRecord{}, processedBy: map[string]int{},
		keyApplies: map[appliedKey]int{}, keysApplied: map[appliedKey]bool{},
		perInvariant: map[string]int{}, suppressed: map[string]int{}, windows: map[windowKey]*blockedWindow{},
		trafficStop: make(chan struct{}),
	}
	c.ctx, c.stop = context.WithCancel(ctx)
	defer c.stop()
	if err := c.reserve(); err != nil {
		return nil, err
	}
	c.t0 = time.Now()
	c.tl = newRecorder(c)
	c.loops.Add(1)
	go c.sampleLoop()
	for i := range s.cfg.Traffic {
		c.loops.Add(1)
		go c.drive(&s.cfg.Traffic[i])
	}
	for i, st := range c.plan.Steps {
		c.beginStep(i + 1)
		fatal := c.do(st)
		c.tl.endStep(i+1, c.now())
		if fatal || c.ctx.Err() != nil {
			break
		}
	}
	c.beginStep(len(c.plan.Steps) + 1)
	c.settle()
	final, agreed := c.finalState()
	c.stopTraffic()
	c.afterInvariants()
	c.teardown()
	c.checkLedger()
	return c.report(final, agreed), nil
}

// reserve gives every replica its address for the whole run.
func (c *Cluster) reserve() error {
	for _, name := range c.sim.order {
		comp := c.sim.components[name]
		for i := 0; i < comp.replicas(); i++ {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				c.releaseReserved()
				return fmt.Errorf("upgradesim: reserving an address for %s: %w", comp.replicaName(i), err)
			}
			r := &replica{comp: comp, index: i, name: comp.replicaName(i), addr: l.Addr().String(), reserved: l}
			r.url = "http://" + r.addr
			if c.sim.cfg.HTTPS {
				r.url = "https://" + r.addr
			}
			c.replicas = append(c.replicas, r)
			c.byName[r.name] = r
			c.byAddr[r.addr] = r
		}
	}
	return nil
}

func (c *Cluster) releaseReserved() {
	for _, r := range c.replicas {
		if r.reserved != nil {
			_ = r.reserved.Close()
			r.reserved = nil
		}
	}
}

// now is the time since the run started.
func (c *Cluster) now() time.Duration { return time.Since(c.t0) }

func (c *Cluster) beginStep(n int) {
	c.mu.Lock()
	c.stepAcked = 0
	c.mu.Unlock()
	c.step.Store(int32(n))
	if n <= len(c.plan.Steps) {
		c.tl.beginStep(n, c.now(), c.plan.Steps[n-1].String())
	}
}

// do carries out one step; it reports whether the run cannot go on.
func (c *Cluster) do(st Step) (fatal bool) {
	switch st.Op {
	case OpStart:
		comp, _, _ := c.sim.resolveReplica(st.Target)
		return c.startStep(c.byName[st.Target], comp.versionIndex(st.Version))
	case OpStop:
		c.stopReplica(c.byName[st.Target], true)
	case OpKill:
		c.stopReplica(c.byName[st.Target], false)
	case OpUpgrade, OpRollback, OpRestart:
		r := c.byName[st.Target]
		c.mu.Lock()
		vi := r.inc.vi
		c.mu.Unlock()
		if st.Op != OpRestart {
			vi = r.comp.versionIndex(st.Version)
		}
		c.stopReplica(r, !st.NoDrain)
		return c.startStep(r, vi)
	case OpPartition, OpSlow, OpDrop:
		c.addFault(st)
	case OpHeal:
		c.heal(st.Target, st.Peer)
	case OpWait:
		select {
		case <-time.After(st.Duration):
		case <-c.ctx.Done():
		}
	case OpWaitUntil:
		c.waitUntil(st)
	case OpHooks:
		c.runHooks(st.Stage)
	}
	return false
}

func (c *Cluster) startStep(r *replica, vi int) (fatal bool) {
	if err := c.startReplica(r, vi); err != nil {
		c.violate(InvariantSteps, "%v", err)
		return true
	}
	return false
}

// startReplica starts r at version vi and serves what it returns.
func (c *Cluster) startReplica(r *replica, vi int) error {
	v := &r.comp.Versions[vi]
	c.mu.Lock()
	c.started++
	inc := &incarnation{r: r, vi: vi, version: v, seq: c.started}
	c.mu.Unlock()
	inc.ctx, inc.cancel = context.WithCancel(c.ctx)
	inc.transport = newFaultTransport(c, inc)
	inc.env = &Env{Component: r.comp.Name, Replica: r.index, Name: r.name, Version: v.Name,
		Addr: r.addr, URL: r.url, Logger: c.sim.cfg.Logger.With("replica", r.name, "version", v.Name), c: c, inc: inc}
	inst, err := v.Start(inc.env)
	if err == nil && inst == nil {
		err = errors.New("Start returned no instance")
	}
	if err == nil && inst.Handler != nil && c.sim.cfg.HTTPS {
		err = errors.New("Start returned a Handler, which the kit serves over plain HTTP only, but Config.HTTPS is set")
	}
	if err != nil {
		inc.cancel()
		inc.transport.close()
		return fmt.Errorf("starting %s at %s: %w", r.name, v.Name, err)
	}
	inc.inst = inst
	if inst.Server != nil || inst.Handler != nil {
		l, err := c.listen(r)
		if err != nil {
			inc.cancel()
			c.closeInstance(inc)
			return fmt.Errorf("starting %s at %s: listening on %s: %w", r.name, v.Name, r.addr, err)
		}
		inc.served = make(chan error, 1)
		inc.listener = l
		if inst.Server != nil {
			go func() { inc.served <- inst.Server.Serve(l) }()
		} else {
			inc.http = &http.Server{Handler: c.observe(inc, inst.Handler), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				err := inc.http.Serve(l)
				if errors.Is(err, http.ErrServerClosed) {
					err = nil
				}
				inc.served <- err
			}()
		}
	}
	c.mu.Lock()
	r.inc, r.state = inc, stateUp
	for i := range c.disturbances {
		if d := &c.disturbances[i]; d.replica == r.name && d.to == math.MaxInt64 {
			d.to = c.now() + killAftermath
		}
	}
	c.mu.Unlock()
	c.tl.replicaState(r, c.now(), "up", v.Name)
	return nil
}

// listen binds r's address: the reserved listener the first time, a new
// one afterwards, retrying briefly while the old process lets go of it.
func (c *Cluster) listen(r *replica) (net.Listener, error) {
	if l := r.reserved; l != nil {
		r.reserved = nil
		return l, nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := net.Listen("tcp", r.addr)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killAftermath is how long after a killed replica is back its peers'
// failed calls are still laid to the kill.
const killAftermath = 250 * time.Millisecond

// callerGrace is how long a draining replica's own calls may take to end
// before they are abandoned.
const callerGrace = 250 * time.Millisecond

// stopReplica stops r's incarnation: with drain, its calls get a grace
// period and its server drains; without, everything is cut at once.
func (c *Cluster) stopReplica(r *replica, drain bool) {
	c.mu.Lock()
	inc := r.inc
	if inc == nil {
		c.mu.Unlock()
		return
	}
	r.state = stateDraining
	c.mu.Unlock()
	now := c.now()
	if drain {
		c.tl.replicaState(r, now, "draining", inc.version.Name)
		waitGroupFor(&inc.calls, callerGrace)
	} else {
		c.tl.mark(now, "kill", r.name)
		// A kill disturbs its peers until shortly after the replica is
		// back: their pooled connections to the dead process fail once
		// each, as after any crash.
		c.mu.Lock()
		c.disturbances = append(c.disturbances, disturbance{a: r.comp.Name, b: "*", from: now, to: math.MaxInt64, replica: r.name})
		c.mu.Unlock()
		inc.transport.kill()
	}
	inc.cancel()
	if inc.served != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var err error
		switch {
		case inc.inst.Server != nil && drain:
			err = inc.inst.Server.Shutdown(ctx)
		case inc.inst.Server != nil:
			err = inc.inst.Server.Close()
		case drain:
			err = inc.http.Shutdown(ctx)
		default:
			err = inc.http.Close()
		}
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, http.ErrServerClosed) {
			c.sim.cfg.Logger.Warn("upgradesim: stopping", "replica", r.name, "err", err)
		}
		select {
		case <-inc.served:
		case <-time.After(15 * time.Second):
			c.violate(InvariantSteps, "%s did not stop serving within 15s", r.name)
		}
		_ = inc.listener.Close()
	}
	inc.calls.Wait()
	c.closeInstance(inc)
	c.mu.Lock()
	r.inc, r.state = nil, stateDown
	c.mu.Unlock()
	c.tl.replicaState(r, c.now(), "down", "")
}

// closeInstance closes an incarnation's clients, its Close hook and its
// transport.
func (c *Cluster) closeInstance(inc *incarnation) {
	names := make([]string, 0, len(inc.inst.Clients))
	for name := range inc.inst.Clients {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if cl := inc.inst.Clients[name]; cl != nil {
			_ = cl.Close()
		}
	}
	if inc.inst.Close != nil {
		if err := inc.inst.Close(); err != nil {
			c.sim.cfg.Logger.Warn("upgradesim: closing", "replica", inc.r.name, "err", err)
		}
	}
	inc.transport.close()
}

// waitGroupFor waits for wg at most d.
func waitGroupFor(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (c *Cluster) waitUntil(st Step) {
	began := c.now()
	deadline := time.Now().Add(st.Duration)
	t := time.NewTicker(c.sim.cfg.SampleEvery)
	defer t.Stop()
	for {
		err := st.Until.Holds(c)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.violate(InvariantSteps, "%s did not hold within %s: %v%s", st.Until.Name, st.Duration, err, c.sessionLogs(began))
			return
		}
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
	}
}

func (c *Cluster) runHooks(stage Stage) {
	for _, h := range c.sim.cfg.Hooks {
		if h.Stage != stage {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.sim.cfg.SettleBound+c.sim.callTimeout())
		err := h.Run(ctx, c)
		cancel()
		if err != nil {
			c.violate("hook "+h.Name, "%s hook %s failed: %v", stage, h.Name, err)
		}
	}
}

// settle waits, after the last step, for every client that can connect to
// do so; the sampler reports windows that outlast the bound.
func (c *Cluster) settle() {
	deadline := time.Now().Add(c.sim.cfg.SettleBound)
	for {
		err := c.Connected()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.violate(InvariantBlockedBounded, "clients still had no session %s after the last step: %v",
				c.sim.cfg.SettleBound, err)
			return
		}
		select {
		case <-time.After(c.sim.cfg.SampleEvery):
		case <-c.ctx.Done():
			return
		}
	}
}

// afterInvariants runs the user's After checks, each retried until it
// passes or the settle bound ends.
func (c *Cluster) afterInvariants() {
	invariants := c.sim.cfg.Invariants
	if len(c.sim.cfg.Watches) > 0 {
		invariants = append([]Invariant{{Name: InvariantWatchersConverge, After: func(context.Context, *Cluster) error {
			return c.watchersConverged()
		}}}, invariants...)
	}
	for _, inv := range invariants {
		if inv.After == nil {
			continue
		}
		deadline := time.Now().Add(c.sim.cfg.SettleBound)
		for {
			ctx, cancel := context.WithDeadline(c.ctx, deadline)
			err := inv.After(ctx, c)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || c.ctx.Err() != nil {
				c.violate(inv.Name, "%v", err)
				break
			}
			time.Sleep(c.sim.cfg.SampleEvery)
		}
	}
}

// stopTraffic stops making calls and lets those in flight finish, for two
// seconds at most, so the After invariants see a quiet system.
func (c *Cluster) stopTraffic() {
	close(c.trafficStop)
	c.loops.Wait()
	var incs []*incarnation
	c.mu.Lock()
	for _, r := range c.replicas {
		if r.inc != nil {
			incs = append(incs, r.inc)
		}
	}
	c.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for _, inc := range incs {
		waitGroupFor(&inc.calls, time.Until(deadline))
	}
}

// teardown stops every replica, draining, all at once; calls still in
// flight are abandoned.
func (c *Cluster) teardown() {
	c.mu.Lock()
	c.tearingDown = true
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range c.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stopReplica(r, true)
		}()
	}
	wg.Wait()
	c.releaseReserved()
	c.tl.finish(c.now())
}

// finalState records, after the settle, every replica's version and every
// client replica's agreed versions.
func (c *Cluster) finalState() (map[string]string, map[string][]string) {
	final := map[string]string{}
	agreed := map[string][]string{}
	c.mu.Lock()
	for _, r := range c.replicas {
		if r.inc != nil {
			final[r.name] = r.inc.version.Name
		} else {
			final[r.name] = ""
		}
	}
	c.mu.Unlock()
	for _, p := range c.pairs() {
		for _, r := range c.replicasOf(p.from) {
			cl, _ := c.clientOf(r, p.to)
			if cl == nil {
				continue
			}
			ready := c.readyVersions(cl, p.to)
			if len(ready) > 0 {
				agreed[r.name+"→"+p.to] = ready
			}
		}
	}
	return final, agreed
}

// Seed returns the plan's seed.
func (c *Cluster) Seed() int64 { return c.plan.Seed }

// Plan returns the plan as it runs.
func (c *Cluster) Plan() Plan { return c.plan }

// Step returns the number of the step running (0 before the first,
// len(steps)+1 after the last).
func (c *Cluster) Step() int { return int(c.step.Load()) }

// Version returns the version replica runs, or "" when it is down.
func (c *Cluster) Version(replica string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.byName[replica]; r != nil && r.inc != nil {
		return r.inc.version.Name
	}
	return ""
}

// Instance returns what replica runs, or nil when it is down.
func (c *Cluster) Instance(replica string) *Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.byName[replica]; r != nil && r.inc != nil && r.state == stateUp {
		return r.inc.inst
	}
	return nil
}

// Client returns replica's client of component server, or nil when the
// replica is down or has none.
func (c *Cluster) Client(replica, server string) *framework.Client {
	if inst := c.Instance(replica); inst != nil {
		return inst.Clients[server]
	}
	return nil
}

// Endpoints returns the base URLs of a component's replicas, up or not.
func (c *Cluster) Endpoints(component string) []string {
	var out []string
	for _, r := range c.replicas {
		if r.comp.Name == component {
			out = append(out, r.url)
		}
	}
	return out
}

// Replicas returns the names of a component's replicas.
func (c *Cluster) Replicas(component string) []string {
	var out []string
	for _, r := range c.replicas {
		if r.comp.Name == component {
			out = append(out, r.name)
		}
	}
	return out
}

// Logf adds a line to the run's timeline notes, printed with the report.
func (c *Cluster) Logf(format string, args ...any) {
	c.tl.note(c.now(), fmt.Sprintf(format, args...))
}
