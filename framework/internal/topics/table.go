package topics

// The server's table of topics: every topic it holds, by contract,
// version and name, and the forks of server-written topics that wait for
// the writer of their current form.

import (
	"fmt"
	"sort"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// Table is every topic a server holds, by contract, version and name,
// with the forks that serve a server-written topic at an earlier version
// from its current form's writer (framework.ForkServedTopic). Its zero
// value is empty and ready.
//
// Its lock is a leaf: the server may take it under its own lock, and
// nothing else is taken while it is held; a fork's Attach runs after it
// is released, since attaching serves a topic in turn.
type Table struct {
	mu     sync.Mutex
	byKey  map[tableKey]*Store
	stores []*Store // in the order they were added
	forks  []*PendingFork
}

// tableKey names a topic of a contract version.
type tableKey struct{ contract, version, name string }

// PendingFork is a server-written topic served at the earlier version Old
// of Contract by converting its form at Current down, once Current's
// writer is served: either order of serving works.
type PendingFork struct {
	Contract, Old, Current string
	Topic                  string
	// Attach forks the writer of the current form (a framework
	// *TopicWriter[T]); it runs once, without the table's lock.
	Attach   func(w any)
	attached bool
}

// Add adds a topic's store; a topic of the same contract, version and
// name added before is an error, and the store is not added.
func (t *Table) Add(s *Store) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := tableKey{s.contract, s.version, s.name}
	if _, dup := t.byKey[k]; dup {
		return fmt.Errorf("%s %s topic %s registered twice", s.contract, s.version, s.name)
	}
	if t.byKey == nil {
		t.byKey = map[tableKey]*Store{}
	}
	t.byKey[k] = s
	t.stores = append(t.stores, s)
	return nil
}

// Get returns the topic name of a contract version, or nil.
func (t *Table) Get(contract, version, name string) *Store {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[tableKey{contract, version, name}]
}

// All returns every topic the table holds.
func (t *Table) All() []*Store {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Store(nil), t.stores...)
}

// Drain ends every watch stream with a closing frame and refuses new
// ones: the server is draining.
func (t *Table) Drain() {
	for _, s := range t.All() {
		s.Drain()
	}
}

// Stop closes every watch stream's connection: the server stopped. The
// server then waits for their goroutines (Host.Goroutines).
func (t *Table) Stop() {
	for _, s := range t.All() {
		s.Stop()
	}
}

// PeerLost applies the loss of a session (of instance, a client of
// component speaking contract) to the topics of its contract: the
// lost-writer policy to the keys its instance wrote, a closing frame to
// its watch streams.
func (t *Table) PeerLost(contract, component, instance string) {
	for _, s := range t.All() {
		s.PeerLost(contract, component, instance)
	}
}

// WriterReports reports the writers of every topic of the contracts
// named, for a heartbeat's answer.
func (t *Table) WriterReports(contracts map[string]bool) []wire.TopicWriterReport {
	if len(contracts) == 0 {
		return nil
	}
	var out []wire.TopicWriterReport
	for _, s := range t.All() {
		if contracts[s.contract] {
			out = append(out, wire.TopicWriterReport{Contract: s.contract, Version: s.version, Topic: s.name, Writer: s.WriterLive()})
		}
	}
	return out
}

// Stats describes every topic of the table, sorted by contract, version
// and topic.
func (t *Table) Stats() []Stats {
	var out []Stats
	for _, s := range t.All() {
		out = append(out, s.Stats())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Contract != b.Contract {
			return a.Contract < b.Contract
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Topic < b.Topic
	})
	return out
}

// Gauges are the table's topics as the metrics' gauges read them at
// scrape time, sorted as [Table.Stats].
func (t *Table) Gauges() []metrics.Topic {
	stats := t.Stats()
	out := make([]metrics.Topic, 0, len(stats))
	for _, st := range stats {
		g := metrics.Topic{Contract: st.Contract, Version: st.Version, Topic: st.Topic, Keys: st.Keys, Writers: st.Writers,
			Watchers: len(st.Watchers), Sets: st.Sets, Deletes: st.Deletes, Coalesced: st.Coalesced}
		for _, w := range st.Watchers {
			g.Queued += w.Queued
		}
		out = append(out, g)
	}
	return out
}

// AddFork adds a fork of a server-written topic. When the writer of its
// current form is served already, it returns that writer, and the caller
// attaches the fork to it; else the fork waits for [Table.Served]. A fork
// of the same topic to the same version added before is an error.
func (t *Table) AddFork(f *PendingFork) (writer any, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.forks {
		if g.Contract == f.Contract && g.Old == f.Old && g.Topic == f.Topic {
			return nil, fmt.Errorf("%s %s topic %s forked twice", f.Contract, f.Old, f.Topic)
		}
	}
	t.forks = append(t.forks, f)
	if s := t.byKey[tableKey{f.Contract, f.Current, f.Topic}]; s != nil && s.Writer != nil {
		f.attached = true
		return s.Writer, nil
	}
	return nil, nil
}

// Served records w, a framework *TopicWriter[T], as the writer of the
// server-written topic s, and attaches the forks that wait for it.
func (t *Table) Served(s *Store, w any) {
	t.mu.Lock()
	s.Writer = w
	var due []*PendingFork
	for _, f := range t.forks {
		if !f.attached && f.Topic == s.name && f.Contract == s.contract && f.Current == s.version {
			f.attached = true
			due = append(due, f)
		}
	}
	t.mu.Unlock()
	for _, f := range due {
		f.Attach(w)
	}
}

// Forked reports whether topic is forked to a contract's version from a
// later one.
func (t *Table) Forked(contract, version, topic string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.forks {
		if f.Topic == topic && f.Contract == contract && f.Old == version {
			return true
		}
	}
	return false
}

// Waiting returns the forks whose current form's writer is not served
// yet: at the server's start, each is a topic forked from a form it
// never serves.
func (t *Table) Waiting() []PendingFork {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []PendingFork
	for _, f := range t.forks {
		if !f.attached {
			out = append(out, PendingFork{Contract: f.Contract, Old: f.Old, Current: f.Current, Topic: f.Topic})
		}
	}
	return out
}
