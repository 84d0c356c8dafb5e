package nodecontroller

import (
	"sync"
	"time"
)

// Liveness is the record, shared by node controller replicas, of which
// replicas hear each node's kubelet: the kubelet session instances that
// reported each node, which replicas hold a session of each instance, and
// when the last replica that held one lost it. It plays the part of
// Kubernetes' node leases (kube-node-lease), which every replica of the
// node lifecycle controller reads: a kubelet holds a session with every
// replica, and one of them may lapse (its heartbeats late on a loaded
// machine) while the others go on hearing it, so a replica's grace period
// ends in Unknown only once no replica has held a session of the node's
// kubelet for the grace period, not once its own session is gone. Without
// a Liveness a replica judges by its own sessions (the binaries, whose
// replicas share no memory).
type Liveness struct {
	mu sync.Mutex
	// node is the node each kubelet session instance reported; held the
	// replicas holding a session of each instance; released when the last
	// replica holding a session of a node's kubelet lost it.
	node     map[string]string
	held     map[string]map[string]bool
	released map[string]time.Time
	// since is when a replica first held a session of each instance.
	since map[string]time.Time
}

// NewLiveness returns an empty record.
func NewLiveness() *Liveness {
	return &Liveness{node: map[string]string{}, held: map[string]map[string]bool{}, released: map[string]time.Time{},
		since: map[string]time.Time{}}
}

// learn records that a kubelet session instance reports a node.
func (l *Liveness) learn(instance, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.node[instance] = node
}

// nodeOf returns the node a kubelet session instance reported to any
// replica, "" if none.
func (l *Liveness) nodeOf(instance string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node[instance]
}

// hold records that replica holds a session of instance, since at.
func (l *Liveness) hold(instance, replica string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[instance] == nil {
		l.held[instance] = map[string]bool{}
		l.since[instance] = at
	}
	l.held[instance][replica] = true
}

// release records that replica lost its session of instance at at.
func (l *Liveness) release(instance, replica string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(instance, replica, at)
}

func (l *Liveness) releaseLocked(instance, replica string, at time.Time) {
	if !l.held[instance][replica] {
		return
	}
	delete(l.held[instance], replica)
	if len(l.held[instance]) == 0 {
		delete(l.held, instance)
		delete(l.since, instance)
	}
	if node := l.node[instance]; node != "" && !l.heardLocked(node) && at.After(l.released[node]) {
		l.released[node] = at
	}
}

// leave records that replica holds no session any more (it stopped).
func (l *Liveness) leave(replica string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for instance := range l.held {
		l.releaseLocked(instance, replica, at)
	}
}

// heardLocked reports whether some replica holds a session of a kubelet
// instance that reported node.
func (l *Liveness) heardLocked(node string) bool {
	for instance, replicas := range l.held {
		if len(replicas) > 0 && l.node[instance] == node {
			return true
		}
	}
	return false
}

// graceLeft returns how long node's grace period still runs at now: all
// of grace while some replica holds a session of its kubelet, else what is
// left of grace since the last such session was lost (zero or less: the
// node is lost). A session no replica knows the node of yet (a new
// kubelet's, before its first report) may be this node's: until it has
// been held for grace, the grace period runs on for it.
func (l *Liveness) graceLeft(node string, grace time.Duration, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heardLocked(node) {
		return grace
	}
	left := time.Duration(0)
	if at, ok := l.released[node]; ok {
		left = at.Add(grace).Sub(now)
	}
	for instance, at := range l.since {
		if l.node[instance] == "" {
			left = max(left, at.Add(grace).Sub(now))
		}
	}
	return left
}
