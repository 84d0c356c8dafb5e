package demo

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// Preemption in the demo: the kubelet's nodes are small (NodeCPUMillis),
// so the scheduler's pods fill them within seconds; from then on a pod of
// a higher priority class that fits nowhere evicts pods of lower priority
// (the scheduler's preemption, the node controller's Evict), and the
// evicted pods' kubelet stops them. The pod loop follows every eviction
// the node controller made (nodecontroller.Config.Evicted).

// NodeCPUMillis is the CPU capacity of each of the demo's nodes: about
// two or three of the scheduler's pods fill one.
const NodeCPUMillis = 800

// evicted records an eviction the node controller made.
func (l *podLoop) evicted(e nodecontroller.Eviction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.evictions = append(l.evictions, e)
	for _, v := range e.Victims {
		l.victims[v.UID] = true
	}
}

// checkEvictions holds every eviction to having made room for a pod of
// higher priority that was then bound there: each victim's priority is
// below the preemptor's, what was left of the node's allocatable
// resources with what the victims requested given back fits the
// preemptor, and the pod store holds the preemptor bound to that node
// (the node controller binds it with the eviction), as the scheduler's
// binding of it says too if it made one, within the loop's bound while
// the run goes on, and at the end (final) at all.
func (l *podLoop) checkEvictions(final bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, e := range l.evictions {
		p := e.Preemptor
		for _, v := range e.Victims {
			if v.Priority >= p.Priority {
				return fmt.Errorf("%s/%s (priority %d) was evicted from %s for %s/%s, whose priority %d is not higher",
					v.Namespace, v.Name, v.Priority, e.Node, p.Pod.Namespace, p.Pod.Name, p.Priority)
			}
		}
		if !roomFor(p, e.After) {
			return fmt.Errorf("evicting %d pod(s) from %s left %dm CPU, %d bytes of memory, %d pods, which does not fit %s/%s (%dm, %d bytes)",
				len(e.Victims), e.Node, e.After.CPUMillis, e.After.MemoryBytes, e.After.Pods, p.Pod.Namespace, p.Pod.Name, p.Requests.CPUMillis, p.Requests.MemoryBytes)
		}
		pl, placed := l.placed[p.Pod.UID]
		on, bound := l.stored[p.Pod.UID]
		switch {
		case placed && pl.node != e.Node:
			return fmt.Errorf("pods were evicted from %s for %s/%s, which the scheduler then bound to %s", e.Node, p.Pod.Namespace, p.Pod.Name, pl.node)
		case bound && on != e.Node:
			return fmt.Errorf("pods were evicted from %s for %s/%s, which was then bound to %s", e.Node, p.Pod.Namespace, p.Pod.Name, on)
		case !bound && (final || now.Sub(e.At) > l.limit):
			return fmt.Errorf("pods were evicted from %s for %s/%s %s ago, which was not bound there", e.Node, p.Pod.Namespace, p.Pod.Name, dur(now.Sub(e.At)))
		}
	}
	return nil
}

// roomFor reports whether the preemptor's requests fit in left.
func roomFor(p nhv2.Preemptor, left nhv2.Resources) bool {
	return left.Pods >= 1 && p.Requests.CPUMillis <= left.CPUMillis && p.Requests.MemoryBytes <= left.MemoryBytes
}

// preempted holds once the scheduler placed a pod by preemption.
func (l *podLoop) preempted() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.evictions) == 0 {
		return fmt.Errorf("no pod was placed by preemption: the nodes never filled (%d pods bound)", len(l.placed))
	}
	return nil
}

// preemptedCondition holds once a pod was placed by preemption.
func (l *podLoop) preemptedCondition() upgradesim.Condition {
	return upgradesim.Condition{Name: "a pod placed by preemption", Holds: func(*upgradesim.Cluster) error { return l.preempted() }}
}

// evictionSeries is the timeline's row of evictions, on the clock of a
// run that began at t0: one mark per victim.
func (l *podLoop) evictionSeries(t0 time.Time) upgradesim.CallSeries {
	var at []time.Duration
	for _, e := range l.evictions {
		for range e.Victims {
			at = append(at, e.At.Sub(t0))
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	return upgradesim.CallSeries{Label: "pods evicted for higher priority (nodecontroller Evict)", OK: at}
}

// preemptionOutcome says what preemption did.
func (l *podLoop) preemptionOutcome() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	victims := 0
	ran := 0
	for _, e := range l.evictions {
		victims += len(e.Victims)
		if r, ok := l.ran[e.Preemptor.Pod.UID]; ok && r.node == e.Node {
			ran++
		}
	}
	return fmt.Sprintf("preemption: %d pods of higher priority placed by evicting %d of lower priority; %d of them reported Running on that node",
		len(l.evictions), victims, ran)
}
