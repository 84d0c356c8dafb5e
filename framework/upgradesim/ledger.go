package upgradesim

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// HeaderCall carries a traffic call's id from the kit's client interceptor
// to the server, where [Env.Apply] and the kit's server interceptor read
// it. Calls without it (a hook's own calls, say) are not tracked.
const HeaderCall = "Lockstep-Sim-Call"

// callRecord is everything the kit knows of one traffic call.
type callRecord struct {
	id       string
	traffic  *Traffic
	from     *incarnation
	contract string // set when the client interceptor sees the call
	traveled string // the contract version the call last travelled at
	dest     *replica
	start    time.Duration
	end      time.Duration
	startSt  int
	endSt    int
	err      error
	done     bool
	acked    bool
	// abandoned calls ended because their caller stopped or the run ended.
	abandoned bool
	applies   map[string]int // by batch item ("" for a unary call)
	processed int
	// idempotent is set when the called method is declared idempotent: its
	// client may resend it after a failure that leaves its fate unknown,
	// and applying it again changes nothing.
	idempotent bool
	// key is the call's idempotency key, if it carries one: a server
	// applies a key once, whichever calls carry it.
	key string
	// history is what the kit saw happen to the call (see history.go).
	history []*callEvent
}

type callKey struct{}

// CallID returns the id of the traffic call ctx belongs to: on the client,
// the ctx a [Traffic] Call receives; on a server, a handler's ctx. It is ""
// for calls the kit did not make.
func CallID(ctx context.Context) string {
	if rec, ok := ctx.Value(callKey{}).(*callRecord); ok {
		return rec.id
	}
	if call := framework.CallFromContext(ctx); call != nil {
		return call.Header.Get(HeaderCall)
	}
	return ""
}

// CallStats counts a run's traffic calls.
type CallStats struct {
	// Made calls were started; Acknowledged ones returned nil, Failed ones
	// an error, Abandoned ones ended because their caller stopped.
	Made, Acknowledged, Failed, Abandoned int
	// Applied counts calls the servers reported applying with [Env.Apply].
	Applied int
	// Reapplied counts applies of idempotent calls beyond their first: a
	// client resent them after failures that left their fate unknown.
	Reapplied int
}

// drive makes tr's calls until the run's traffic stops or MaxCalls were
// made.
func (c *Cluster) drive(tr *Traffic) {
	defer c.loops.Done()
	tick := time.NewTicker(time.Duration(float64(time.Second) / tr.Rate))
	defer tick.Stop()
	var inFlight atomic.Int64
	rr := 0
	for made := 0; made < tr.MaxCalls; {
		select {
		case <-c.trafficStop:
			return
		case <-tick.C:
		}
		if inFlight.Load() >= int64(tr.MaxInFlight) {
			continue
		}
		rec, cl := c.newCall(tr, &rr)
		if rec == nil {
			continue
		}
		made++
		inFlight.Add(1)
		go func() {
			defer rec.from.calls.Done()
			defer inFlight.Add(-1)
			c.runCall(rec, cl)
		}()
	}
}

// newCall picks the next running replica of tr.From that has a client of
// tr.To, round-robin, and registers a call from it.
func (c *Cluster) newCall(tr *Traffic, rr *int) (*callRecord, *framework.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var from []*replica
	for _, r := range c.replicas {
		if r.comp.Name == tr.From && r.state == stateUp && r.inc.inst.Clients[tr.To] != nil {
			from = append(from, r)
		}
	}
	if len(from) == 0 || c.tearingDown {
		return nil, nil
	}
	r := from[*rr%len(from)]
	*rr++
	c.nextID++
	rec := &callRecord{id: "c" + strconv.Itoa(c.nextID), traffic: tr, from: r.inc,
		start: c.now(), startSt: int(c.step.Load()), applies: map[string]int{}}
	c.calls[rec.id] = rec
	c.callOrder = append(c.callOrder, rec)
	// Added under the lock that stopReplica takes to mark the replica
	// draining, so no call is added once it waits for them.
	r.inc.calls.Add(1)
	return rec, r.inc.inst.Clients[tr.To]
}

func (c *Cluster) runCall(rec *callRecord, cl *framework.Client) {
	ctx, cancel := context.WithTimeout(rec.from.ctx, rec.traffic.Timeout)
	err := rec.traffic.Call(context.WithValue(ctx, callKey{}, rec), cl)
	cancel()
	callerStopped := rec.from.ctx.Err() != nil
	now := c.now()
	c.mu.Lock()
	rec.done, rec.end, rec.endSt, rec.err = true, now, int(c.step.Load()), err
	rec.acked = err == nil
	rec.abandoned = err != nil && (callerStopped || c.tearingDown)
	if rec.acked {
		c.stepAcked++
	}
	dest := c.destComponent(rec)
	from := rec.from.r.comp
	excused := rec.abandoned || c.disturbedLocked(from.Name, dest, rec.start, now)
	external := from.External || c.sim.components[dest].External
	destName := dest
	if rec.dest != nil {
		destName = rec.dest.name
	}
	c.tl.call(now, from.Name+"→"+dest, outcomeOf(err, rec.abandoned))
	history := historyText(rec)
	c.mu.Unlock()
	if err != nil && external && !excused {
		c.violate(InvariantExternalUninterrupted, "call %s from %s (%s) to %s failed after %s: %v; its history:%s\n  the session requests of %s from %s on:%s",
			rec.id, rec.from.r.name, rec.from.version.Name, destName, (now - rec.start).Round(time.Millisecond), withPeerState(err), history,
			rec.from.r.name, (rec.start - time.Second).Round(time.Millisecond), rec.from.sessions.text(rec.start-time.Second))
	}
}

// destComponent is the component a call reached, or the one its traffic
// calls when it was never routed.
func (c *Cluster) destComponent(rec *callRecord) string {
	if rec.dest != nil {
		return rec.dest.comp.Name
	}
	return rec.traffic.To
}

// clientInterceptor stamps traffic calls with their id and records the
// version and endpoint each travelled at.
func (c *Cluster) clientInterceptor() framework.Interceptor {
	return func(next framework.CallFunc) framework.CallFunc {
		return func(ctx context.Context, call *framework.Call) (any, error) {
			rec, ok := ctx.Value(callKey{}).(*callRecord)
			if !ok {
				return next(ctx, call)
			}
			idempotent := false
			if cl := rec.from.inst.Clients[rec.traffic.To]; cl != nil {
				m, _ := cl.Contract().Method(call.Method)
				idempotent = m.Idempotent
			}
			c.mu.Lock()
			rec.contract, rec.idempotent = call.Contract, idempotent
			rec.key = call.Header.Get(protocol.HeaderIdempotencyKey)
			c.mu.Unlock()
			call.Header.Set(HeaderCall, rec.id)
			out, err := next(ctx, call)
			dest := c.replicaAt(call.Endpoint)
			c.mu.Lock()
			if call.Endpoint != "" {
				rec.traveled, rec.dest = call.Version, dest
			}
			c.mu.Unlock()
			return out, err
		}
	}
}

// replicaAt returns the replica serving a base URL, or nil.
func (c *Cluster) replicaAt(base string) *replica {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	return c.byAddr[u.Host]
}

// serverInterceptor records every traffic call a handler is about to
// process, and checks the versions.
func (c *Cluster) serverInterceptor(inc *incarnation) framework.Interceptor {
	return func(next framework.CallFunc) framework.CallFunc {
		return func(ctx context.Context, call *framework.Call) (any, error) {
			if id := call.Header.Get(HeaderCall); id != "" {
				c.processed(id, inc, call.Contract, call.Version)
			}
			return next(ctx, call)
		}
	}
}

// processed records that inc's handler processed call id at contract
// version cv, and checks that both sides speak it.
func (c *Cluster) processed(id string, inc *incarnation, contract, cv string) {
	c.mu.Lock()
	rec := c.calls[id]
	c.processedBy[inc.r.comp.Name]++
	if rec != nil {
		rec.processed++
		if contract == "" {
			contract = rec.contract
		}
		c.noteLocked(rec, fmt.Sprintf("processed by %s at %s %s", inc, contract, cv))
	}
	c.mu.Unlock()
	if rec == nil {
		return
	}
	if cv == "" {
		// A plain handler at a path without a version (a pinned peer's):
		// it processes its own version.
		if vs := inc.version.Speaks[contract]; len(vs) > 0 {
			cv = vs[0]
		}
	}
	client := rec.from
	if !speaks(inc.version, contract, cv) || !speaks(client.version, contract, cv) {
		c.violate(InvariantVersions, "call %s from %s (%s, speaks %s) was processed by %s (%s, speaks %s) at %s %s",
			id, client.r.name, client.version.Name, speaksText(client.version, contract),
			inc.r.name, inc.version.Name, speaksText(inc.version, contract), contract, cv)
	}
}

// applied records that inc applied call id (item of a batch, or "").
// Applying a call again breaks applied-once unless its method is declared
// idempotent; a keyed call counts once per key, whichever calls carry it.
// A second apply is reported once every call ended, with the histories of
// the calls involved.
func (c *Cluster) applied(id, item string, inc *incarnation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.calls[id]
	if rec == nil {
		return
	}
	ev := "applied by " + inc.String()
	if item != "" {
		ev += " (item " + item + ")"
	}
	c.noteLocked(rec, ev)
	rec.applies[item]++
	n := rec.applies[item]
	what := "call " + id
	involved := []*callRecord{rec}
	if rec.key != "" {
		k := appliedKey{rec.contract, rec.key, item}
		c.keyApplies[k]++
		n = c.keyApplies[k]
		c.keysApplied[appliedKey{contract: rec.contract, key: rec.key}] = true
		what = "key " + rec.key + " (call " + id + ")"
		if n > 1 {
			involved = c.keyCallsLocked(rec)
		}
	}
	if rec.idempotent && rec.key == "" {
		c.reapplied += min(1, n-1)
		n = 1
	}
	if n > 1 {
		if item != "" {
			what += " item " + item
		}
		c.doubles = append(c.doubles, doubleApply{rec: rec, item: item, n: n, by: inc, at: c.now(),
			step: int(c.step.Load()), what: what, calls: involved})
	}
}

// keyCallsLocked returns every call that carried rec's idempotency key.
func (c *Cluster) keyCallsLocked(rec *callRecord) []*callRecord {
	var out []*callRecord
	for _, r := range c.callOrder {
		if r.key == rec.key && r.contract == rec.contract {
			out = append(out, r)
		}
	}
	return out
}

// checkLedger checks, once every call ended, that every acknowledged call
// was applied, and that every component that acknowledged calls was seen
// processing them.
func (c *Cluster) checkLedger() {
	c.reportDoubles()
	type lost struct {
		rec  *callRecord
		dest string
	}
	var losts []lost
	acked := map[string]int{}
	c.mu.Lock()
	for _, rec := range c.callOrder {
		if !rec.acked {
			continue
		}
		dest := c.destComponent(rec)
		acked[dest]++
		if c.sim.components[dest].SkipLedger || len(rec.applies) > 0 || c.keyAppliedLocked(rec) {
			continue
		}
		d := dest
		if rec.dest != nil {
			d = rec.dest.name
		}
		losts = append(losts, lost{rec, d})
	}
	seen := map[string]int{}
	for k, v := range c.processedBy {
		seen[k] = v
	}
	c.mu.Unlock()
	for _, l := range losts {
		c.violateAt(l.rec.endSt, InvariantNoLostCalls, "call %s from %s (%s) was acknowledged by %s at %s %s but never applied",
			l.rec.id, l.rec.from.r.name, l.rec.from.version.Name, l.dest, l.rec.contract, l.rec.traveled)
	}
	names := make([]string, 0, len(acked))
	for name := range acked {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if seen[name] == 0 {
			c.violate(InvariantObserved, "%s acknowledged %d calls but its handlers were never seen processing one: "+
				"build its server with Env.ServerConfig (or serve a Handler through Instance.Handler)", name, acked[name])
		}
	}
}

// keyAppliedLocked reports whether a keyed call's key was applied by any
// call that carried it (a replay is answered from the record, and its
// handler never runs).
func (c *Cluster) keyAppliedLocked(rec *callRecord) bool {
	return rec.key != "" && c.keysApplied[appliedKey{contract: rec.contract, key: rec.key}]
}

// appliedKey names what a keyed call applies: an idempotency key of a
// contract, and the batch item ("" for a unary call, and in keysApplied).
type appliedKey struct{ contract, key, item string }

// stats counts the calls.
func (c *Cluster) stats() CallStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s CallStats
	for _, rec := range c.callOrder {
		s.Made++
		switch {
		case rec.acked:
			s.Acknowledged++
		case rec.abandoned:
			s.Abandoned++
		case rec.done:
			s.Failed++
		}
		if len(rec.applies) > 0 {
			s.Applied++
		}
	}
	s.Reapplied = c.reapplied
	return s
}

// Calls counts the run's traffic calls so far.
func (c *Cluster) Calls() CallStats { return c.stats() }

func (c *Cluster) stepAcknowledged() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stepAcked
}

// itemKey names the batch item a call is, or "" for a unary call.
func itemKey(call *framework.Call) string {
	if call == nil || !call.Batch {
		return ""
	}
	return strconv.Itoa(call.Item)
}

// pathVersion returns the contract and version of a lockstep call path
// (/lockstep/<contract>/<version>/<Method>), or "" for another path.
func pathVersion(path string) (contract, version string) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) == 4 && parts[0] == "lockstep" {
		return parts[1], parts[2]
	}
	return "", ""
}

// withPeerState is err's text and, when the call's context ended it while
// it waited for a peer, the state of its peers then, which the error keeps
// beside its message ([framework.PeerState]).
func withPeerState(err error) string {
	var ps *framework.PeerState
	if errors.As(err, &ps) && !strings.Contains(err.Error(), ps.Error()) {
		return err.Error() + " (" + ps.Error() + ")"
	}
	return err.Error()
}
