package nodecontroller

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Lease elects the replica that writes NodeHealth among node controller
// replicas. It is the sample's simple lease, not a consensus protocol: a
// real control plane takes a Kubernetes coordination.k8s.io Lease (with
// client-go's leaderelection) or its own consensus. Replicas holding a
// lease on different clocks can briefly both believe they hold it; the
// framework's writer-aware routing then sends watchers to either, which
// is harmless for a topic whose every replica computes the same health.
type Lease interface {
	// Acquire takes the lease for c.Holder, or renews it, until c.TTL
	// from now, unless another holder's lease is still running and that
	// holder hears kubelets or c does not (see [Claim]); it reports
	// whether c.Holder holds it now.
	Acquire(c Claim) (bool, error)
	// Release gives the lease up, if holder holds it, so that another
	// replica takes over at once instead of after the TTL.
	Release(holder string) error
}

// Claim is one replica's Acquire: who, for how long, and whether it hears
// kubelets.
//
// HearsKubelets is what lets a replica that can take over from a leader
// that cannot: a leader that holds no kubelet session (a v1 replica once
// every kubelet runs v2, which a v1 replica cannot serve) would mark every
// node Unknown when the nodes' grace period ends, while a replica that
// hears them is kept out by the lease. A claim that hears kubelets takes
// the lease from a holder whose last claim did not; between two claims
// that both hear kubelets, or neither, the holder keeps it, so a total
// outage of the kubelets still leaves one writer to publish the nodes
// Unknown.
//
// TakeOver makes a claim that only takes the lease from a holder that
// hears no kubelet, not a free or lapsed one: a replica that has just
// started claims so until it has run a TTL (time for kubelets to reach
// it before it competes for a free lease).
//
// Nodes is how many nodes the claimant knows. A claim takes the lease from
// a running holder that hears no kubelet only if it knows as many nodes as
// the holder did when it last claimed, so that a replica that has heard
// from only some of the kubelets' nodes does not take over and publish
// the others as gone; unless Overdue: it has waited long enough for the
// rest (the node controller waits half the nodes' grace period, after
// which the holder would mark them Unknown anyway).
type Claim struct {
	Holder        string
	TTL           time.Duration
	HearsKubelets bool
	TakeOver      bool
	Nodes         int
	Overdue       bool
}

// leaseRecord is the state of a lease: who holds it, until when, and
// whether its holder heard kubelets when it last claimed it.
type leaseRecord struct {
	Holder        string    `json:"holder"`
	Until         time.Time `json:"until"`
	HearsKubelets bool      `json:"hearsKubelets,omitempty"`
	Nodes         int       `json:"nodes,omitempty"`
}

// acquire applies an Acquire to a record, at now.
func (r *leaseRecord) acquire(c Claim, now time.Time) bool {
	running := r.Holder != "" && now.Before(r.Until)
	if running && r.Holder != c.Holder && (r.HearsKubelets || !c.HearsKubelets || (c.Nodes < r.Nodes && !c.Overdue)) {
		return false
	}
	if c.TakeOver && (!running || r.Holder == c.Holder) {
		return false
	}
	*r = leaseRecord{Holder: c.Holder, Until: now.Add(c.TTL), HearsKubelets: c.HearsKubelets, Nodes: c.Nodes}
	return true
}

// MemoryLease is a lease shared by replicas in one process (the demo and
// tests run the control plane in one process).
type MemoryLease struct {
	mu  sync.Mutex
	rec leaseRecord
	now func() time.Time
}

// NewMemoryLease returns a lease nobody holds.
func NewMemoryLease() *MemoryLease { return &MemoryLease{now: time.Now} }

// Acquire implements [Lease].
func (l *MemoryLease) Acquire(c Claim) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.acquire(c, l.now()), nil
}

// Release implements [Lease].
func (l *MemoryLease) Release(holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.Holder == holder {
		l.rec = leaseRecord{}
	}
	return nil
}

// Holder returns who holds the lease now, "" for nobody.
func (l *MemoryLease) Holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.now().Before(l.rec.Until) {
		return l.rec.Holder
	}
	return ""
}

// FileLease is a lease kept in a file that replicas on one host share
// (the sample's binaries run on one machine): each Acquire reads and
// rewrites it under an exclusive flock.
type FileLease struct{ Path string }

// Acquire implements [Lease].
func (l FileLease) Acquire(c Claim) (bool, error) {
	held := false
	err := l.update(func(r *leaseRecord) bool {
		held = r.acquire(c, time.Now())
		return held
	})
	return held, err
}

// Release implements [Lease].
func (l FileLease) Release(holder string) error {
	return l.update(func(r *leaseRecord) bool {
		if r.Holder != holder {
			return false
		}
		*r = leaseRecord{}
		return true
	})
}

// update runs change on the file's record under the lock, writing it back
// when change reports it changed.
func (l FileLease) update(change func(*leaseRecord) bool) error {
	f, err := os.OpenFile(l.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.Path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lease %s: %w", l.Path, err)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	var rec leaseRecord
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		if err := json.NewDecoder(f).Decode(&rec); err != nil {
			rec = leaseRecord{} // a torn or foreign file: start over
		}
	}
	if !change(&rec) {
		return nil
	}
	b, _ := json.Marshal(rec)
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	return errors.Join(err, f.Sync())
}
