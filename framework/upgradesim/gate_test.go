package upgradesim_test

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// A plan's verdicts rest on real-time bounds of the system it runs (calls
// time out after 10 s, sessions live 1 s, a blocked client must resume
// within BlockedBound), so what starves a plan of CPU breaks them. Running
// plans side by side saves wall time only while the process keeps up:
// with four at once beside make test's other packages at load 28, calls
// to the pinned extender waited 8 s for a handler that takes
// microseconds, and 52 invariants broke in 50 plans that took 413 s; two
// at once took 114 s with 3 violations, one at once passes. So a plan
// starts beside others only while this process's timers fire on time: how
// late they fire is what the machine's load does to every bound a plan
// checks.

// lateTolerance is how late, at the 90th percentile, a short sleep of this
// process may wake for another plan to start beside those running. On an
// idle two-core machine running four plans it stays under a millisecond;
// at load 29 it is 9 to 11 ms.
const lateTolerance = 3 * time.Millisecond

// lateSample is the sleep the lateness meter times.
const lateSample = 5 * time.Millisecond

// lateness measures how late this process's sleeps wake: the 90th
// percentile of the last lateWindow samples.
type lateness struct {
	mu     sync.Mutex
	recent []time.Duration // a ring of the last samples
	next   int
	stop   chan struct{}
	done   chan struct{}
}

// lateWindow is how many samples the meter keeps: about a second's worth.
const lateWindow = 150

func startLateness() *lateness {
	l := &lateness{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			began := time.Now()
			select {
			case <-l.stop:
				return
			case <-time.After(lateSample):
			}
			l.add(time.Since(began) - lateSample)
		}
	}()
	return l
}

func (l *lateness) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recent) < lateWindow {
		l.recent = append(l.recent, d)
		return
	}
	l.recent[l.next] = d
	l.next = (l.next + 1) % lateWindow
}

// p90 is the 90th percentile of the recent samples; a meter with too few
// samples to say reads as late, so that the first plans start one by one
// until it knows.
func (l *lateness) p90() time.Duration {
	l.mu.Lock()
	s := slices.Clone(l.recent)
	l.mu.Unlock()
	if len(s) < lateWindow/2 {
		return time.Hour
	}
	slices.Sort(s)
	return s[len(s)*9/10]
}

func (l *lateness) close() {
	close(l.stop)
	<-l.done
}

// planGate admits plans: always one, and up to most at once while the
// meter says this process keeps time. After admitting a plan beside
// others it waits a meter's window before admitting another beside them,
// so that the meter sees what the last one did.
type planGate struct {
	most    int
	meter   *lateness
	mu      sync.Mutex
	running int
	lastAt  time.Time // when a plan was last admitted beside others
	// peak is the most plans that ran at once, for the test's log.
	peak int
}

// newPlanGate returns a gate for at most most plans at once, and never
// more than the process has cores to run at once (GOMAXPROCS): beyond
// that the plans only queue for CPU when the machine is busy.
func newPlanGate(most int) *planGate {
	return &planGate{most: max(1, min(most, runtime.GOMAXPROCS(0))), meter: startLateness()}
}

// enter waits until a plan may start.
func (g *planGate) enter() {
	for {
		g.mu.Lock()
		alone := g.running == 0
		beside := g.running < g.most && time.Since(g.lastAt) >= lateSample*lateWindow && g.meter.p90() < lateTolerance
		if alone || beside {
			if !alone {
				g.lastAt = time.Now()
			}
			g.running++
			g.peak = max(g.peak, g.running)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // re-check: the condition is the timer meter's reading, which no event announces
	}
}

// leave marks a plan done.
func (g *planGate) leave() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
}

func (g *planGate) close() { g.meter.close() }
