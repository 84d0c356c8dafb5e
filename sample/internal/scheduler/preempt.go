package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sort"

	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

// Preemption, as kube-scheduler's DefaultPreemption plugin does it,
// simplified. When no node fits a pod, the scheduler looks for nodes where
// evicting pods of lower priority makes room for it:
//
//  1. A node is a candidate if it is ready, schedulable and its taints are
//     tolerated (evicting pods does not change those), the pod does not
//     fit there now, and it would fit with every pod of lower priority gone.
//     Pods of equal or higher priority are never victims.
//  2. On each candidate the victims are as few as kube-scheduler's
//     SelectVictimsOnNode leaves: with every lower-priority pod removed,
//     they are added back from the most important (highest priority, then
//     UID) down, and each that still leaves room for the pod is spared.
//  3. Every extender configured with a preemptVerb (ProcessPreemption,
//     extender 1.0.0 or 2.0.0) and interested in the pod is asked in turn
//     which candidates it agrees with; it may drop candidates and spare
//     victims. A candidate it answers with a victim the scheduler did not
//     propose, or whose victims no longer make room, is dropped.
//  4. Of the candidates left, the scheduler takes the one with the fewest
//     victims, then the lowest highest victim priority, then the lowest
//     sum of victim priorities, then the first node by name.
//     kube-scheduler ranks PodDisruptionBudget violations first and the
//     victims' count fourth; the sample has no budgets.
//  5. It confirms the best with the node controller (CheckNode: a watch
//     may lag), taking the next where the node's pods changed so that the
//     victims would no longer make room, and evicts the victims through
//     the node controller (nodehealth Evict), which unbinds them at once,
//     so their kubelet stops them, and binds the pod there in the same
//     step, so that no other binding takes the room and a scheduler
//     stopped just then cannot leave it empty (kube-scheduler nominates
//     the node for the pod instead). Then the scheduler binds the pod as
//     it binds any pod (the binding extender's Bind, and the node
//     controller's Bind, which changes nothing now), finishing even if it
//     is being stopped.
//
// What the sample leaves out: preemptionPolicy (every pod may preempt),
// PodDisruptionBudgets, the nominated node and the graceful termination of
// victims (kube-scheduler sets the preemptor's nominatedNodeName and binds
// it in a later cycle, once the victims are gone; the sample's node
// controller frees their resources at once), and re-running extender
// filters on the chosen node (extenders that care answer
// ProcessPreemption, as kube-scheduler expects them to).

// Candidate is a node where evicting Victims makes room for a pod.
type Candidate struct {
	Node    string
	Victims []nhv2.BoundPod
}

// Preemption is a pod placed by preemption: the node, and the pods
// evicted from it.
type Preemption struct {
	Pod     extv2.PodRef
	Node    string
	Victims []nhv2.BoundPod
}

// SelectVictims returns the pods to evict from the node h describes so
// that pod fits, fewest first as step 2 above says, and whether evicting
// lower-priority pods makes room at all. A pod that fits already needs no
// preemption: false.
func SelectVictims(pod extv2.PodRef, h nhv2.NodeHealth) ([]nhv2.BoundPod, bool) {
	if fits(pod, h.Allocatable) {
		return nil, false
	}
	prio := extv2.PriorityOf(pod)
	left := h.Allocatable
	var lower []nhv2.BoundPod
	for _, p := range h.Pods {
		if p.Priority < prio {
			lower = append(lower, p)
			left = free(left, p)
		}
	}
	if len(lower) == 0 || !fits(pod, left) {
		return nil, false
	}
	sort.SliceStable(lower, func(i, j int) bool {
		if lower[i].Priority != lower[j].Priority {
			return lower[i].Priority > lower[j].Priority
		}
		return lower[i].Pod.UID < lower[j].Pod.UID
	})
	var victims []nhv2.BoundPod
	for _, p := range lower {
		if kept := take(left, p); fits(pod, kept) {
			left = kept // spared
			continue
		}
		victims = append(victims, p)
	}
	return victims, true
}

// free is left with the pod's requests given back.
func free(left nhv2.Resources, p nhv2.BoundPod) nhv2.Resources {
	return nhv2.Resources{CPUMillis: left.CPUMillis + p.Requests.CPUMillis, MemoryBytes: left.MemoryBytes + p.Requests.MemoryBytes, Pods: left.Pods + 1}
}

// take is left with the pod's requests taken.
func take(left nhv2.Resources, p nhv2.BoundPod) nhv2.Resources {
	return nhv2.Resources{CPUMillis: left.CPUMillis - p.Requests.CPUMillis, MemoryBytes: left.MemoryBytes - p.Requests.MemoryBytes, Pods: left.Pods - 1}
}

// PreemptionCandidates returns the nodes of the scheduler's cache where preemption
// makes room for pod (steps 1 and 2), best first (step 4).
func (s *Scheduler) PreemptionCandidates(pod extv2.PodRef) []Candidate {
	var out []Candidate
	for _, h := range s.Nodes() {
		if h.State != nhv2.NodeHealthStateReady || !h.Schedulable || !tolerates(pod, h.Taints) {
			continue
		}
		if victims, ok := SelectVictims(pod, h); ok {
			out = append(out, Candidate{Node: h.NodeName, Victims: victims})
		}
	}
	rank(out)
	return out
}

// rank sorts candidates best first (step 4).
func rank(cs []Candidate) {
	highest := func(c Candidate) int64 {
		var m int64
		for i, v := range c.Victims {
			if i == 0 || v.Priority > m {
				m = v.Priority
			}
		}
		return m
	}
	sum := func(c Candidate) int64 {
		var n int64
		for _, v := range c.Victims {
			n += v.Priority
		}
		return n
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		switch {
		case len(a.Victims) != len(b.Victims):
			return len(a.Victims) < len(b.Victims)
		case highest(a) != highest(b):
			return highest(a) < highest(b)
		case sum(a) != sum(b):
			return sum(a) < sum(b)
		}
		return a.Node < b.Node
	})
}

// preempt places a pod no node fits by evicting pods of lower priority
// (steps 3 to 5); ErrNoNode when preemption does not help.
func (s *Scheduler) preempt(ctx context.Context, pod extv2.PodRef) (string, error) {
	candidates := s.PreemptionCandidates(pod)
	for _, e := range s.extenders {
		if len(candidates) == 0 {
			break
		}
		if !e.cfg.Preempt || !s.interested(e, pod) {
			continue
		}
		agreed, err := s.askExtender(ctx, e, pod, candidates)
		if err != nil {
			if s.skip(ctx, e, "preempt", pod, err) {
				continue
			}
			return "", fmt.Errorf("extender %s: preempt: %w", e.cfg.Name, err)
		}
		candidates = agreed
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("%w: preempting pods of lower priority would not make room", ErrNoNode)
	}
	rank(candidates)
	best, err := s.confirm(ctx, pod, candidates)
	if err != nil {
		return "", err
	}
	if len(best.Victims) > 0 {
		// From the eviction on, the scheduler finishes the binding even if
		// it is being stopped meanwhile (within CallTimeout), and without
		// checking the node again (confirm just did), so that no eviction
		// is for nothing.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
		defer cancel()
		if err := s.Evict(ctx, pod, best.Node, best.Victims); err != nil {
			return "", fmt.Errorf("node controller: evict from %s: %w", best.Node, err)
		}
		s.stats.Preempted.Add(1)
		s.stats.Victims.Add(int64(len(best.Victims)))
		s.victims.Add(float64(len(best.Victims)))
		if s.cfg.OnPreempted != nil {
			s.cfg.OnPreempted(Preemption{Pod: pod, Node: best.Node, Victims: best.Victims})
		}
		s.logger.Info("preempted pods of lower priority", "pod", pod.Name, "node", best.Node, "victims", len(best.Victims))
		if err := s.commit(ctx, pod, best.Node); err != nil {
			return "", err
		}
		return best.Node, nil
	}
	if err := s.bind(ctx, pod, best.Node); err != nil {
		return "", err
	}
	return best.Node, nil
}

// confirm returns the first of the candidates, best first, where the
// node controller's health of the node now (a watch may lag) still holds
// every victim, and evicting them makes room for the pod: an eviction
// that would not make room is never made.
func (s *Scheduler) confirm(ctx context.Context, pod extv2.PodRef, candidates []Candidate) (Candidate, error) {
	for _, c := range candidates {
		h, err := s.CheckNode(ctx, c.Node)
		if err != nil {
			return Candidate{}, fmt.Errorf("node controller: check %s: %w", c.Node, err)
		}
		if h.State != nhv2.NodeHealthStateReady || !h.Schedulable {
			continue
		}
		if fits(pod, h.Allocatable) {
			// Room was made meanwhile (a pod ended): no victim is needed.
			return Candidate{Node: c.Node}, nil
		}
		held := true
		for _, v := range c.Victims {
			if !slices.ContainsFunc(h.Pods, func(p nhv2.BoundPod) bool { return p == v }) {
				held = false
				break
			}
		}
		if held && roomWith(pod, *h, c.Victims) {
			return c, nil
		}
	}
	return Candidate{}, fmt.Errorf("%w: the preemption candidates changed since they were watched", ErrNoNode)
}

// askExtender asks e which candidates it agrees with (step 3) and returns
// those it kept, with the victims it kept, that still make room.
func (s *Scheduler) askExtender(ctx context.Context, e *extender, pod extv2.PodRef, candidates []Candidate) ([]Candidate, error) {
	req := make([]extv2.PreemptRequestCandidatesItem, len(candidates))
	byNode := map[string]Candidate{}
	for i, c := range candidates {
		req[i] = extv2.PreemptRequestCandidatesItem{Node: c.Node, Victims: make([]extv2.PodRef, len(c.Victims))}
		for j, v := range c.Victims {
			req[i].Victims[j] = victimRef(v)
		}
		byNode[c.Node] = c
	}
	res, err := s.Preempt(ctx, e.cfg.Name, pod, req)
	if err != nil {
		return nil, err
	}
	health := map[string]nhv2.NodeHealth{}
	for _, h := range s.Nodes() {
		health[h.NodeName] = h
	}
	var out []Candidate
	for _, rc := range res.Candidates {
		c, proposed := byNode[rc.Node]
		if !proposed {
			s.logger.Warn("an extender agreed to preempt on a node not proposed; left out", "extender", e.cfg.Name, "node", rc.Node)
			continue
		}
		kept := Candidate{Node: c.Node}
		ok := true
		for _, uid := range rc.Victims {
			i := slices.IndexFunc(c.Victims, func(v nhv2.BoundPod) bool { return v.Pod.UID == uid })
			if i < 0 {
				s.logger.Warn("an extender named a victim not proposed; the node is left out", "extender", e.cfg.Name, "node", rc.Node, "uid", uid)
				ok = false
				break
			}
			if !slices.ContainsFunc(kept.Victims, func(v nhv2.BoundPod) bool { return v.Pod.UID == uid }) {
				kept.Victims = append(kept.Victims, c.Victims[i])
			}
		}
		if !ok || !roomWith(pod, health[c.Node], kept.Victims) {
			continue
		}
		out = append(out, kept)
	}
	return out, nil
}

// roomWith reports whether evicting victims from the node makes room for
// pod.
func roomWith(pod extv2.PodRef, h nhv2.NodeHealth, victims []nhv2.BoundPod) bool {
	if len(victims) == 0 {
		return false // nothing evicted: no room made
	}
	left := h.Allocatable
	for _, v := range victims {
		left = free(left, v)
	}
	return fits(pod, left)
}

// victimRef is a victim as the extender contract names a pod: identity,
// requests and priority (the node controller keeps no labels).
func victimRef(v nhv2.BoundPod) extv2.PodRef {
	prio := v.Priority
	return extv2.PodRef{Namespace: v.Pod.Namespace, Name: v.Pod.Name, UID: v.Pod.UID, Priority: &prio,
		Requests: extv2.Requests{CPUMillis: v.Requests.CPUMillis, MemoryBytes: v.Requests.MemoryBytes}}
}
