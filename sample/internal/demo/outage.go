package demo

import "time"

// The process mode holds every bound pod to running within runBound of
// the time its kubelet could hear of it. A kubelet cannot while it or its
// node controller is being upgraded: from the SIGTERM of either until the
// kubelet holds a session with a node controller that is not draining
// again (it blocks meanwhile, by design). Under load those restarts alone
// take longer than runBound, so a pod bound just before or during them
// would break the bound whatever the loop does; the time of such an
// outage, as the harness saw its two ends, does not count against a pod.

// outage is one stretch in which the kubelet could hear of no pod, on the
// run's clock; to is zero while it lasts.
type outage struct{ from, to time.Duration }

// loopOutages are the kubelet↔nodecontroller outages of a run, in order.
type loopOutages []outage

// begin opens an outage at at (a SIGTERM of the kubelet or the node
// controller), unless one is open.
func (o *loopOutages) begin(at time.Duration) {
	if n := len(*o); n > 0 && (*o)[n-1].to == 0 {
		return
	}
	*o = append(*o, outage{from: at})
}

// heard closes the open outage, if it began before at: the kubelet was
// seen holding a session with a node controller that is not draining,
// from a sample taken at at.
func (o *loopOutages) heard(at time.Duration) {
	if n := len(*o); n > 0 && (*o)[n-1].to == 0 && (*o)[n-1].from < at {
		(*o)[n-1].to = at
	}
}

// within returns how much of [from, to] fell in outages; one still open
// lasts until to.
func (o loopOutages) within(from, to time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range o {
		end := d.to
		if end == 0 {
			end = to
		}
		if lo, hi := max(from, d.from), min(to, end); hi > lo {
			sum += hi - lo
		}
	}
	return sum
}
