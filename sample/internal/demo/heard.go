package demo

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
)

// heardWatch is nodes-stay-known's record of when each node's kubelet was
// last heard: the last heartbeat or report of any of its sessions that any
// node controller replica handled, as the replicas' servers measure it (a
// session's Idle). It judges each Unknown verdict of the NodeHealth writer
// against that record rather than against a wall-clock bound, so that a
// node counts as wrongly lost only if the writer marked it Unknown less
// than the grace period after the kubelet was last heard by some replica
// (a leader that does not hear the kubelets while another replica does,
// one that takes over before it knows the nodes, a grace timer that fires
// early). A node whose kubelet no replica heard for the grace period is
// Unknown rightly (a starved machine whose kubelet sessions lapse, or an
// upgrade step slower than the grace period, while the kubelet is blocked);
// such verdicts are counted in the outcome, and blocked-bounded still
// bounds how long a kubelet waits for a compatible replica.
type heardWatch struct {
	grace time.Duration

	mu sync.Mutex
	// heard holds, per node, the times its kubelet was heard, increasing;
	// entries older than keepHeard are dropped but for the newest of them.
	heard map[string][]time.Time
	// judged are the verdicts already judged (node and when it was
	// marked), rightful ones with the kubelet's silence before them.
	judged  map[lostVerdict]bool
	excused []time.Duration
}

// lostVerdict is one Unknown verdict: a node and when its grace period ended.
type lostVerdict struct {
	node string
	at   time.Time
}

// keepHeard is how long heard times are kept: a verdict is judged at the
// first sample that sees it, well within this.
const keepHeard = 30 * time.Second

func newHeardWatch(grace time.Duration) *heardWatch {
	return &heardWatch{grace: grace, heard: map[string][]time.Time{}, judged: map[lostVerdict]bool{}}
}

// sample records, at now, when the kubelet of every node that holds a
// session with one of the replicas' servers was last heard.
func (h *heardWatch) sample(now time.Time, sessions [][]framework.SessionInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, all := range sessions {
		for _, s := range all {
			if s.Contract != nsv1.Contract.Name() {
				continue
			}
			h.heardLocked(nodeOfInstance(s.Peer.Instance), now.Add(-s.Idle))
		}
	}
}

func (h *heardWatch) heardLocked(node string, at time.Time) {
	times := h.heard[node]
	if n := len(times); n > 0 && !at.After(times[n-1]) {
		return
	}
	times = append(times, at)
	cut := 0
	for cut < len(times)-1 && at.Sub(times[cut+1]) > keepHeard {
		cut++
	}
	h.heard[node] = times[cut:]
}

// lastBefore returns when the node's kubelet was last heard before at.
func (h *heardWatch) lastBefore(node string, at time.Time) (time.Time, bool) {
	times := h.heard[node]
	i := sort.Search(len(times), func(i int) bool { return !times[i].Before(at) })
	if i == 0 {
		return time.Time{}, false
	}
	return times[i-1], true
}

// check judges the writer's Unknown verdicts (node → when its grace period
// ended) not judged before.
func (h *heardWatch) check(lost map[string]time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(lost))
	for name := range lost {
		names = append(names, name)
	}
	sort.Strings(names)
	var wrong []string
	for _, name := range names {
		v := lostVerdict{name, lost[name]}
		if h.judged[v] {
			continue
		}
		last, ok := h.lastBefore(name, v.at)
		switch silence := v.at.Sub(last); {
		case !ok:
			wrong = append(wrong, fmt.Sprintf("%s became Unknown although no replica had heard its kubelet", name))
		case silence < h.grace:
			wrong = append(wrong, fmt.Sprintf("%s became Unknown %s after a replica last heard its kubelet (grace %s)",
				name, silence.Round(time.Millisecond), h.grace))
		default:
			h.judged[v] = true
			h.excused = append(h.excused, silence)
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%s", strings.Join(wrong, "; "))
	}
	return nil
}

// outcome says how many nodes became Unknown rightly, and the longest
// silence of a kubelet before one did.
func (h *heardWatch) outcome() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.excused) == 0 {
		return "nodes marked Unknown: none"
	}
	longest := h.excused[0]
	for _, s := range h.excused {
		longest = max(longest, s)
	}
	return fmt.Sprintf("nodes marked Unknown: %d time(s), each after no replica had heard the node's kubelet for the grace period (%s; longest silence %s)",
		len(h.excused), h.grace, longest.Round(time.Millisecond))
}

// nodeOfInstance is the node a kubelet session's instance is of: the
// kubelet names each node's session "<node>.<kubelet's id>".
func nodeOfInstance(instance string) string {
	if i := strings.LastIndexByte(instance, '.'); i > 0 {
		return instance[:i]
	}
	return instance
}
