package upgradesim

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// pair is a (client component, server component) pair that traffic
// declares.
type pair struct{ from, to string }

// pairs returns the traffic's pairs, each once, in declaration order.
func (c *Cluster) pairs() []pair {
	var out []pair
	seen := map[pair]bool{}
	for _, tr := range c.sim.cfg.Traffic {
		p := pair{tr.From, tr.To}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (c *Cluster) replicasOf(component string) []*replica {
	var out []*replica
	for _, r := range c.replicas {
		if r.comp.Name == component {
			out = append(out, r)
		}
	}
	return out
}

// clientOf returns r's running client of component to, and its
// incarnation.
func (c *Cluster) clientOf(r *replica, to string) (*framework.Client, *incarnation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.state != stateUp || r.inc == nil {
		return nil, nil
	}
	return r.inc.inst.Clients[to], r.inc
}

// readyVersions returns the versions cl holds sessions at with replicas of
// component to, sorted.
func (c *Cluster) readyVersions(cl *framework.Client, to string) []string {
	seen := map[string]bool{}
	for _, e := range cl.Endpoints() {
		if e.State != "ready" {
			continue
		}
		u, err := url.Parse(e.URL)
		if err != nil {
			continue
		}
		if r := c.byAddr[u.Host]; r != nil && r.comp.Name == to {
			seen[cl.Contract().Name()+" "+e.Version] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// availability says whether a replica of component to runs a version
// compatible with inc's for contract and is reachable from it; it returns
// the first such replica's description, or why none is.
func (c *Cluster) availability(inc *incarnation, to, contract string) (peer string, ok bool, partitioned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cut, total := 0, 0
	for _, s := range c.replicas {
		if s.comp.Name != to {
			continue
		}
		total++
		if c.partitionedLocked(inc.r, s) {
			cut++
			continue
		}
		if s.state == stateUp && compatible(inc.version, s.inc.version, contract) {
			return fmt.Sprintf("%s (%s, speaks %s)", s.name, s.inc.version.Name, speaksText(s.inc.version, contract)), true, false
		}
	}
	return "", false, total > 0 && cut == total
}

// windowKey names a client incarnation's view of a server component.
type windowKey struct {
	inc *incarnation
	to  string
}

// blockedWindow is a span during which a client had no session although a
// compatible server was available to it.
type blockedWindow struct {
	since    time.Duration
	peer     string
	reported bool
}

// sampleLoop samples the cluster until the run's traffic stops.
func (c *Cluster) sampleLoop() {
	defer c.loops.Done()
	t := time.NewTicker(c.sim.cfg.SampleEvery)
	defer t.Stop()
	for {
		c.sample()
		select {
		case <-c.trafficStop:
			return
		case <-t.C:
		}
	}
}

// sample records every client replica's sessions in the timeline, checks
// blocked windows, and runs the During invariants.
func (c *Cluster) sample() {
	now := c.now()
	live := map[windowKey]bool{}
	for _, p := range c.pairs() {
		for _, r := range c.replicasOf(p.from) {
			label := r.name + "→" + p.to
			cl, inc := c.clientOf(r, p.to)
			if cl == nil {
				c.tl.pairState(label, now, "down", "")
				continue
			}
			contract := cl.Contract().Name()
			ready := c.readyVersions(cl, p.to)
			peer, available, partitioned := c.availability(inc, p.to, contract)
			switch {
			case len(ready) > 0:
				c.tl.pairState(label, now, "agreed", strings.Join(ready, ","))
			case partitioned:
				c.tl.pairState(label, now, "partitioned", "")
			default:
				c.tl.pairState(label, now, "blocked", "")
			}
			if len(ready) > 0 || !available {
				continue
			}
			key := windowKey{inc, p.to}
			live[key] = true
			c.mu.Lock()
			w := c.windows[key]
			if w == nil {
				w = &blockedWindow{since: now, peer: peer}
				c.windows[key] = w
			}
			late := !w.reported && now-w.since > c.sim.cfg.BlockedBound
			if late {
				w.reported = true
			}
			since := w.since
			c.mu.Unlock()
			if late {
				c.violate(InvariantBlockedBounded, "%s (%s) has had no session with %s for %s although %s was available to it (bound %s); its endpoints: %s",
					r.name, inc.version.Name, p.to, (now - since).Round(time.Millisecond), peer, c.sim.cfg.BlockedBound, endpointsText(cl))
			}
		}
	}
	c.mu.Lock()
	for k := range c.windows {
		if !live[k] {
			delete(c.windows, k)
		}
	}
	c.mu.Unlock()
	for _, inv := range c.sim.cfg.Invariants {
		if inv.During == nil {
			continue
		}
		if err := inv.During(c); err != nil {
			c.violateOncePerStep(inv.Name, err)
		}
	}
}

// violateOncePerStep records a During invariant's failure once per step.
func (c *Cluster) violateOncePerStep(name string, err error) {
	step := int(c.step.Load())
	c.mu.Lock()
	if c.duringSeen == nil {
		c.duringSeen = map[string]int{}
	}
	if last, ok := c.duringSeen[name]; ok && last == step {
		c.mu.Unlock()
		return
	}
	c.duringSeen[name] = step
	c.mu.Unlock()
	c.violate(name, "%v", err)
}

func endpointsText(cl *framework.Client) string {
	eps := cl.Endpoints()
	parts := make([]string, len(eps))
	for i, e := range eps {
		parts[i] = e.URL + " " + e.State
		if e.Version != "" {
			parts[i] += " (" + e.Version + ")"
		}
		if e.Error != "" {
			parts[i] += ": " + e.Error
		}
	}
	return strings.Join(parts, "; ")
}

// Connected returns nil when every running client that has a compatible
// server available (running, not partitioned from it, speaking a contract
// version in common) holds a session with some replica of that server;
// otherwise an error names the clients still blocked.
func (c *Cluster) Connected() error {
	var blocked []string
	for _, p := range c.pairs() {
		for _, r := range c.replicasOf(p.from) {
			cl, inc := c.clientOf(r, p.to)
			if cl == nil {
				continue
			}
			if len(c.readyVersions(cl, p.to)) > 0 {
				continue
			}
			if peer, ok, _ := c.availability(inc, p.to, cl.Contract().Name()); ok {
				blocked = append(blocked, fmt.Sprintf("%s has no session with %s although %s is available (endpoints: %s)",
					r.name, p.to, peer, endpointsText(cl)))
			}
		}
	}
	if len(blocked) > 0 {
		return fmt.Errorf("%s", strings.Join(blocked, "; "))
	}
	return nil
}
