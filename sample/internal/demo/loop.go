package demo

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

// runBound is how long a pod the scheduler placed may take until the
// kubelet of the node it chose reports it Running. It covers the worst
// the rolling upgrade does to the loop: the kubelet's 2.0.0 watch waits
// for a 2.0.0 node controller replica to lead.
const runBound = 5 * time.Second

// podLoop follows every pod from the scheduler's binding to the report,
// by the kubelet of the node it chose, that it runs: the to-node loop.
type podLoop struct {
	limit time.Duration
	now   func() time.Time

	mu     sync.Mutex
	placed map[string]placement // by UID: where the scheduler bound it
	// ran is, by UID, where a pod was first reported Running, or ended
	// (a pod may end before its Running was reported: the kubelet
	// reports a pod's latest phase, as a Kubernetes kubelet does).
	ran map[string]placement
	// evictions are those the node controller made (preemption.go);
	// victims are the UIDs of the pods they evicted.
	evictions []nodecontroller.Eviction
	victims   map[string]bool
	// stored is the node the pod store first held each pod bound to.
	stored map[string]string
	// closed is set once the final check passed: pods the scheduler
	// places afterwards, while the run is torn down, are not followed.
	closed bool
	// outages are the stretches, since origin, in which the kubelet had a
	// node without a session with a compatible node controller (kubelet),
	// as the process mode's are its restarts (outage.go): it could hear
	// of no pod then, and that time does not count against a pod.
	outages loopOutages
	origin  time.Time
}

// placement is a pod's node, and when.
type placement struct {
	node string
	at   time.Time
}

func newPodLoop(limit time.Duration) *podLoop {
	l := &podLoop{limit: limit, now: time.Now, placed: map[string]placement{}, ran: map[string]placement{}, victims: map[string]bool{},
		stored: map[string]string{}}
	l.origin = l.now()
	return l
}

// kubelet records, at a sample, whether every node of the kubelet holds a
// session with a compatible node controller: an outage begins when one
// does not and ends when all do again.
func (l *podLoop) kubelet(connected bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.now().Sub(l.origin)
	if connected {
		l.outages.heard(at)
	} else {
		l.outages.begin(at)
	}
}

// waited is how long a pod placed at from waited by to, besides outages.
func (l *podLoop) waited(from, to time.Time) time.Duration {
	return to.Sub(from) - l.outages.within(from.Sub(l.origin), to.Sub(l.origin))
}

// bound records a binding the node controller accepted
// (scheduler.Config.OnBound).
func (l *podLoop) bound(pod extv2.PodRef, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.placed[pod.UID]; !ok && !l.closed {
		l.placed[pod.UID] = placement{node, l.now()}
	}
}

// observe records the first time the pod store holds a pod Running, or
// that it ended: a report the node controller took only from the kubelet
// session of the pod's node (its authorizer), about a pod bound to that
// node (PodStore.Subscribe).
func (l *podLoop) observe(uid string, p *nodecontroller.Pod) {
	if p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.stored[uid]; !ok {
		l.stored[uid] = p.NodeName
	}
	if p.Phase != nsv2.PodStatusPhaseRunning && !p.Ended() {
		return
	}
	if _, ok := l.ran[uid]; !ok {
		l.ran[uid] = placement{p.NodeName, l.now()}
	}
}

// check holds every placed pod to running on its node within the bound:
// while the run goes on, a pod still waiting past the bound is a
// violation; at the end (final) so is one that never ran. A pod evicted
// for one of higher priority before it ran is excused: its kubelet was
// told to stop it.
func (l *podLoop) check(final bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	late, waiting := 0, 0
	var first string
	for uid, pl := range l.placed {
		r, ok := l.ran[uid]
		switch {
		case !ok && l.victims[uid]:
		case ok && r.node != pl.node:
			return fmt.Errorf("pod %s was placed on %s but reported Running or ended on %s", uid, pl.node, r.node)
		case ok && l.waited(pl.at, r.at) > l.limit:
			late++
			if first == "" {
				first = fmt.Sprintf("pod %s ran on %s %s after it was placed (%s besides outages)", uid, pl.node, dur(r.at.Sub(pl.at)), dur(l.waited(pl.at, r.at)))
			}
		case !ok && (final || l.waited(pl.at, now) > l.limit):
			waiting++
			if first == "" {
				first = fmt.Sprintf("pod %s, placed on %s %s ago (%s besides outages), is not reported Running or ended", uid, pl.node, dur(now.Sub(pl.at)), dur(l.waited(pl.at, now)))
			}
		}
	}
	if late+waiting > 0 {
		return fmt.Errorf("%d pod(s) ran later than %s after they were placed, besides the kubelet's outages, %d not yet: %s", late, l.limit, waiting, first)
	}
	if final {
		l.closed = true
	}
	return nil
}

// running holds once n pods were reported Running where they were
// placed.
func (l *podLoop) running(n int) upgradesim.Condition {
	return upgradesim.Condition{Name: fmt.Sprintf("%d pods Running", n), Holds: func(*upgradesim.Cluster) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.ran) < n {
			return fmt.Errorf("%d of %d pods reported Running", len(l.ran), n)
		}
		return nil
	}}
}

// ranSince holds once a pod placed after the condition was first asked
// was reported Running (or ended) on the node it was placed on: the loop,
// seen whole, from the moment a plan step begins to wait for it. Whether
// the nodes have room for a pod at a given moment depends on which pods
// ended; the step waits for the room instead of assuming it.
func (l *podLoop) ranSince() upgradesim.Condition {
	var since time.Time
	return upgradesim.Condition{Name: "a newly placed pod is Running", Holds: func(*upgradesim.Cluster) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if since.IsZero() {
			since = l.now()
		}
		for uid, pl := range l.placed {
			if r, ok := l.ran[uid]; ok && r.node == pl.node && pl.at.After(since) {
				return nil
			}
		}
		return errors.New("no pod placed since the step began was reported Running or ended")
	}}
}

// series are the loop's rows of the timeline's calls: the bindings the
// node controller accepted, the pods reported Running, of the pods
// followed, and the pods evicted for others of higher priority, on the
// clock of a run that began at t0.
func (l *podLoop) series(t0 time.Time) []upgradesim.CallSeries {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := func(m map[string]placement) []time.Duration {
		out := make([]time.Duration, 0, len(m))
		for uid, p := range m {
			if _, followed := l.placed[uid]; followed {
				out = append(out, p.at.Sub(t0))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	return []upgradesim.CallSeries{
		{Label: "pods bound (scheduler→nodecontroller Bind)", OK: at(l.placed)},
		{Label: "pods Running or ended (kubelet of the chosen node)", OK: at(l.ran)},
		l.evictionSeries(t0),
	}
}

// outcome says what the loop did: pods placed, reported Running where
// placed, and how long that took.
func (l *podLoop) outcome() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var waits []time.Duration
	for uid, pl := range l.placed {
		if r, ok := l.ran[uid]; ok && r.node == pl.node {
			waits = append(waits, r.at.Sub(pl.at))
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	line := fmt.Sprintf("the to-node loop: %d pods bound by the scheduler, %d reported Running or ended by the kubelet of the chosen node",
		len(l.placed), len(waits))
	if n := len(waits); n > 0 {
		line += fmt.Sprintf("; bound → Running median %s, max %s (bound %s)", dur(waits[n/2]), dur(waits[n-1]), l.limit)
	}
	return line
}
