package nodecontroller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// PodStore is the record of which pod is bound to which node and what its
// kubelet last reported of it, shared by node controller replicas: what
// Kubernetes keeps in etcd behind its API servers. Any replica serves a
// binding or a pod's status into it; every replica mirrors it into its own
// PodAssignment writer, so the one that leads (and attaches its writer)
// holds every assignment, and one that takes over already does. The
// sample's store is in memory, for replicas in one process (the demo,
// tests), and can be kept in a file ([OpenPodStore]) so that bindings
// outlive a node controller process, as the binary's --pod-store does.
type PodStore struct {
	mu   sync.Mutex
	pods map[string]*Pod
	// onNode counts the pods bound to each node, so that a binding's
	// check of its node's limit costs the same however many pods and
	// nodes the store holds.
	onNode map[string]int
	// subs are told of every change; an error is the subscriber's
	// refusal of it (its PodAssignment topic full), which a binding
	// learns (see bind).
	subs map[int]func(uid string, p *Pod) error
	next int
	now  func() time.Time
	path string // "" for none
}

// Pod is one bound pod as the store holds it.
type Pod struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	UID       string           `json:"uid"`
	NodeName  string           `json:"nodeName"`
	Requests  nhv2.PodRequests `json:"requests"`
	// Priority is the pod's priority (spec.priority), 0 when its binding
	// named none: preemption evicts only pods of lower priority.
	Priority int64 `json:"priority"`
	// Desired is Running, or Stopped once the pod is being deleted: its
	// kubelet stops it, reports it ended, and the pod goes.
	Desired nsv2.PodAssignmentDesiredState `json:"desiredState"`
	// Phase is what its kubelet last reported, Pending until then.
	Phase nsv2.PodStatusPhase `json:"phase"`
	// Phases are the pod's phase changes, first the binding's Pending.
	Phases []PhaseChange `json:"phases"`
}

// PhaseChange is when a pod entered a phase.
type PhaseChange struct {
	Phase nsv2.PodStatusPhase `json:"phase"`
	At    time.Time           `json:"at"`
}

// maxPhases bounds a pod's recorded phase changes; a pod that restarts
// forever keeps its first ones.
const maxPhases = 8

// NewPodStore returns an empty store, in memory.
func NewPodStore() *PodStore {
	return &PodStore{pods: map[string]*Pod{}, onNode: map[string]int{}, subs: map[int]func(string, *Pod) error{}, now: time.Now}
}

// OpenPodStore returns the store kept in the file at path, with what the
// file holds (nothing if it does not exist). Every change rewrites the
// file (a new file renamed over the old), so one process at a time may
// use it: a node controller and, after its restart, the next.
func OpenPodStore(path string) (*PodStore, error) {
	s := NewPodStore()
	s.path = path
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod store: %w", err)
	}
	var pods []*Pod
	if err := json.Unmarshal(b, &pods); err != nil {
		return nil, fmt.Errorf("pod store %s: %w", path, err)
	}
	for _, p := range pods {
		s.putLocked(p)
	}
	return s, nil
}

// putLocked holds p, counting it on its node.
func (s *PodStore) putLocked(p *Pod) {
	if old := s.pods[p.UID]; old != nil {
		s.dropLocked(old.UID)
	}
	s.pods[p.UID] = p
	s.onNode[p.NodeName]++
}

// dropLocked forgets the pod uid, if held.
func (s *PodStore) dropLocked(uid string) {
	p := s.pods[uid]
	if p == nil {
		return
	}
	delete(s.pods, uid)
	if s.onNode[p.NodeName]--; s.onNode[p.NodeName] <= 0 {
		delete(s.onNode, p.NodeName)
	}
}

// saveLocked rewrites the store's file, if it has one.
func (s *PodStore) saveLocked() error {
	if s.path == "" {
		return nil
	}
	pods := make([]*Pod, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	b, err := json.Marshal(pods)
	if err == nil {
		tmp := s.path + ".new"
		if err = os.WriteFile(tmp, b, 0o644); err == nil {
			err = os.Rename(tmp, s.path)
		}
	}
	if err != nil {
		return framework.Errorf(framework.CodeUnavailable, "pod store: %v", err)
	}
	return nil
}

// Subscribe calls f with every pod the store holds now, then with every
// change, in order, under the store's lock, until the returned function is
// called. A pod that went comes as nil when it was unbound (evicted), and
// in its last phase when its kubelet reported it ended ([Pod.Ended]): a
// pod may end before its Running was reported, and that report is then
// the one that shows it ran. f must not call the store.
func (s *PodStore) Subscribe(f func(uid string, p *Pod)) (cancel func()) {
	return s.subscribe(func(uid string, p *Pod) error { f(uid, p); return nil })
}

// subscribe is Subscribe for a subscriber that may refuse a change: a
// node controller whose PodAssignment topic cannot hold a new pod's
// assignment. A binding it refuses is undone (bind); any other change
// it refuses stays, and the subscriber says so itself.
func (s *PodStore) subscribe(f func(uid string, p *Pod) error) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	s.subs[id] = f
	for uid, p := range s.pods {
		cp := *p
		_ = f(uid, &cp)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// changedLocked keeps a change to uid and tells every subscriber of it.
// An error says the change could not be kept in the store's file; it is
// applied all the same, and the caller may send its call again.
func (s *PodStore) changedLocked(uid string) error {
	return s.tellLocked(uid, s.pods[uid])
}

// tellLocked keeps the store and tells every subscriber that uid is now p
// (nil, or ended, for a pod the store no longer holds). It returns the
// store's file's error: a subscriber's refusal undoes only a new binding
// (newLocked), and any other change stays whatever it says.
func (s *PodStore) tellLocked(uid string, p *Pod) error {
	saved := s.saveLocked()
	_ = s.notifyLocked(uid, p)
	return saved
}

// notifyLocked tells every subscriber that uid is now p (nil, or ended,
// for a pod the store no longer holds), each its own copy, and returns
// the first subscriber's refusal of the change.
func (s *PodStore) notifyLocked(uid string, p *Pod) (refused error) {
	var cp *Pod
	if p != nil {
		c := *p
		c.Phases = append([]PhaseChange(nil), p.Phases...)
		cp = &c
	}
	for _, f := range s.subs {
		if err := f(uid, cp); err != nil && refused == nil {
			refused = err
		}
	}
	return refused
}

// newLocked holds the new pod p, tells every subscriber of it and, once
// none refused it, keeps it in the store's file. A subscriber that refuses
// it (its PodAssignment topic holds its bound of keys, so the pod's
// kubelet would never see it) undoes it before the file ever holds it:
// the store lets the pod go, tells every subscriber so, and returns the
// refusal (wrapped, with its code: resource_exhausted for a full topic),
// so that whoever bound it learns the pod is not bound and may try again
// later.
func (s *PodStore) newLocked(p *Pod) error {
	s.putLocked(p)
	refused := s.notifyLocked(p.UID, s.pods[p.UID])
	if refused == nil {
		return s.saveLocked()
	}
	s.dropLocked(p.UID)
	// A pod going is never refused: its assignment's key is deleted.
	_ = s.notifyLocked(p.UID, nil)
	return framework.Errorf(framework.CodeOf(refused), "pod %s/%s (uid %s) not bound to %s: its assignment was not published: %w",
		p.Namespace, p.Name, p.UID, p.NodeName, refused)
}

// bind binds a pod to a node: again to the same node changes nothing, to
// another node is conflict; a node already holding limit pods is
// resource_exhausted, and so is a pod whose assignment a subscriber's
// topic cannot hold (newLocked): the pod is then not bound.
func (s *PodStore) bind(b *nhv2.Binding, limit int) (*Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pods[b.Pod.UID]; p != nil {
		if p.NodeName != b.NodeName {
			return nil, framework.Errorf(framework.CodeConflict, "pod %s/%s (uid %s) is bound to %s already", p.Namespace, p.Name, p.UID, p.NodeName)
		}
		cp := *p
		return &cp, nil
	}
	if on := s.onNode[b.NodeName]; on >= limit {
		return nil, framework.Errorf(framework.CodeResourceExhausted, "node %s has %d pods bound, at most %d kept", b.NodeName, on, limit)
	}
	p := &Pod{Namespace: b.Pod.Namespace, Name: b.Pod.Name, UID: b.Pod.UID, NodeName: b.NodeName, Requests: b.Requests,
		Priority: priority(b.Priority),
		Desired:  nsv2.PodAssignmentDesiredStateRunning, Phase: nsv2.PodStatusPhasePending,
		Phases: []PhaseChange{{Phase: nsv2.PodStatusPhasePending, At: s.now()}}}
	if err := s.newLocked(p); err != nil {
		return nil, err
	}
	cp := *p
	return &cp, nil
}

func priority(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// evict unbinds the victims from the node at once (a deletion without a
// grace period): their assignments go, so their kubelet stops them, and
// what they requested is free for the preemptor, which it binds to the
// node in the same step (a node already holding limit pods, victims gone,
// is resource_exhausted). All or nothing: a victim or the preemptor bound
// to another node is conflict, a victim whose priority is not below the
// preemptor's is permission_denied, and then nothing changes. A victim
// the store no longer holds (it ended, or an earlier call got it) is left
// out of the answer, so a call may be sent again. A preemptor whose
// assignment a subscriber's topic cannot hold is not bound (newLocked):
// its victims stay evicted, and the error says so.
func (s *PodStore) evict(e *nhv2.Eviction, limit int) ([]Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pre := e.Preemptor
	if p := s.pods[pre.Pod.UID]; p != nil && p.NodeName != e.NodeName {
		return nil, framework.Errorf(framework.CodeConflict, "pod %s/%s (uid %s) is bound to %s already", p.Namespace, p.Name, p.UID, p.NodeName)
	}
	var evicted []Pod
	seen := map[string]bool{}
	for _, v := range e.Victims {
		p := s.pods[v.UID]
		if p == nil || seen[v.UID] {
			continue
		}
		seen[v.UID] = true
		if p.NodeName != e.NodeName {
			return nil, framework.Errorf(framework.CodeConflict, "pod %s/%s (uid %s) is bound to %s, not %s", p.Namespace, p.Name, p.UID, p.NodeName, e.NodeName)
		}
		if p.Priority >= pre.Priority {
			return nil, framework.Errorf(framework.CodePermissionDenied, "pod %s/%s (uid %s) has priority %d, not below %d of %s/%s: it may not be preempted for it",
				p.Namespace, p.Name, p.UID, p.Priority, pre.Priority, pre.Pod.Namespace, pre.Pod.Name)
		}
		evicted = append(evicted, *p)
	}
	on := s.onNode[e.NodeName] - len(evicted)
	_, rebind := s.pods[pre.Pod.UID]
	if !rebind && on >= limit {
		return nil, framework.Errorf(framework.CodeResourceExhausted, "node %s has %d pods bound without the victims, at most %d kept", e.NodeName, on, limit)
	}
	var err error
	keep := func(e error) {
		if e != nil {
			err = e
		}
	}
	for _, p := range evicted {
		s.dropLocked(p.UID)
		keep(s.changedLocked(p.UID))
	}
	if !rebind {
		p := &Pod{Namespace: pre.Pod.Namespace, Name: pre.Pod.Name, UID: pre.Pod.UID, NodeName: e.NodeName, Requests: pre.Requests,
			Priority: pre.Priority, Desired: nsv2.PodAssignmentDesiredStateRunning, Phase: nsv2.PodStatusPhasePending,
			Phases: []PhaseChange{{Phase: nsv2.PodStatusPhasePending, At: s.now()}}}
		keep(s.newLocked(p))
	}
	return evicted, err
}

// report records a pod's status from its node's kubelet; a pod that ended
// (Succeeded, Failed) goes. A pod not bound to the reporting node is
// permission_denied (the authorizer refuses it first; this holds it for a
// pod unbound meanwhile).
func (s *PodStore) report(st *nsv2.PodStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[st.UID]
	if p == nil || p.NodeName != st.NodeName {
		return framework.Errorf(framework.CodePermissionDenied, "pod %s is not bound to node %s", st.UID, st.NodeName)
	}
	if st.Phase == p.Phase {
		return nil
	}
	p.Phase = st.Phase
	if len(p.Phases) < maxPhases {
		p.Phases = append(p.Phases, PhaseChange{Phase: st.Phase, At: s.now()})
	}
	if p.Ended() {
		s.dropLocked(st.UID)
		return s.tellLocked(st.UID, p)
	}
	return s.changedLocked(st.UID)
}

// Ended reports whether the pod's kubelet reported it ended (Succeeded or
// Failed): the store no longer holds it.
func (p *Pod) Ended() bool {
	return p.Phase == nsv2.PodStatusPhaseSucceeded || p.Phase == nsv2.PodStatusPhaseFailed
}

// Delete deletes a pod gracefully, as a pod deletion with a grace period:
// its desired state becomes Stopped, its kubelet stops it and reports it
// ended, and then it goes. It reports whether the store held the pod.
func (s *PodStore) Delete(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pods[uid]
	if p == nil {
		return false
	}
	if p.Desired != nsv2.PodAssignmentDesiredStateStopped {
		p.Desired = nsv2.PodAssignmentDesiredStateStopped
		_ = s.changedLocked(uid) // kept in memory; the file follows with the next change
	}
	return true
}

// Pods returns every pod the store holds, by namespace and name.
func (s *PodStore) Pods() []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pod, 0, len(s.pods))
	for _, p := range s.pods {
		cp := *p
		cp.Phases = append([]PhaseChange(nil), p.Phases...)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// assignment is a pod's PodAssignment object.
func (p *Pod) assignment() *nsv2.PodAssignment {
	return &nsv2.PodAssignment{UID: p.UID, Namespace: p.Namespace, Name: p.Name, NodeName: p.NodeName, DesiredState: p.Desired,
		Requests: nsv2.PodRequests{CPUMillis: p.Requests.CPUMillis, MemoryBytes: p.Requests.MemoryBytes}}
}

// bound is the pod as its node's health lists it.
func (p *Pod) bound() nhv2.BoundPod {
	return nhv2.BoundPod{Pod: nhv2.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, Priority: p.Priority, Requests: p.Requests}
}

// String names the pod.
func (p Pod) String() string { return fmt.Sprintf("%s/%s on %s", p.Namespace, p.Name, p.NodeName) }
