package upgradesim

import (
	"sort"
	"sync"
	"time"
)

// Timeline is a run as people read it: the steps, every replica's version
// over time, every client replica's sessions with the component it calls,
// the calls that succeeded and failed, and the kills, faults and
// violations. [Timeline.Text] prints it for a test log and [Timeline.SVG]
// draws it.
type Timeline struct {
	// Plan and Seed name the run; Duration is how long it took.
	Plan     string
	Seed     int64
	Duration time.Duration
	// Steps are the plan's steps as they ran.
	Steps []StepSpan
	// Rows are the replica rows (Kind RowReplica), then the pair rows
	// (Kind RowPair), in declaration order.
	Rows []Row
	// Calls are the traffic's outcomes per (caller, callee) component pair.
	Calls []CallSeries
	// Marks are instants: kills, faults, heals, violations.
	Marks []Mark
	// Notes are lines hooks added with [Cluster.Logf].
	Notes []Mark
}

// StepSpan is when a step ran.
type StepSpan struct {
	Number   int
	Text     string
	From, To time.Duration
}

// RowKind says what a [Row] shows.
type RowKind string

// Row kinds.
const (
	// RowReplica rows show a replica's state: "up" at a version (Value),
	// "draining", or "down".
	RowReplica RowKind = "replica"
	// RowPair rows show a client replica's sessions with a server
	// component: "agreed" at contract versions (Value, comma-separated),
	// "blocked", "partitioned", or "down" when the client is not running.
	RowPair RowKind = "pair"
)

// Row is one line of the timeline: consecutive segments of state.
type Row struct {
	Label string
	Kind  RowKind
	// Versions lists a replica row's component versions, oldest first; a
	// version's symbol is its position.
	Versions []string
	Segments []Segment
}

// Segment is a span of one state.
type Segment struct {
	From, To time.Duration
	State    string
	Value    string
}

// CallSeries is when the calls of one (caller, callee) pair ended, by
// outcome.
type CallSeries struct {
	Label                 string
	OK, Failed, Abandoned []time.Duration
}

// Mark is an instant of the run.
type Mark struct {
	At   time.Duration
	Kind string // "kill", "fault", "heal", "violation", "note"
	Text string
}

// recorder builds a run's timeline as it goes.
type recorder struct {
	mu    sync.Mutex
	tl    Timeline
	rows  map[string]int
	calls map[string]int
}

func newRecorder(c *Cluster) *recorder {
	r := &recorder{tl: Timeline{Plan: c.plan.Name, Seed: c.plan.Seed}, rows: map[string]int{}, calls: map[string]int{}}
	for _, rep := range c.replicas {
		names := make([]string, len(rep.comp.Versions))
		for i, v := range rep.comp.Versions {
			names[i] = v.Name
		}
		r.addRow(Row{Label: rep.name, Kind: RowReplica, Versions: names})
	}
	for _, p := range c.pairs() {
		for _, rep := range c.replicasOf(p.from) {
			r.addRow(Row{Label: rep.name + "→" + p.to, Kind: RowPair})
		}
	}
	return r
}

func (r *recorder) addRow(row Row) {
	row.Segments = []Segment{{From: 0, To: -1, State: "down"}}
	r.rows[row.Label] = len(r.tl.Rows)
	r.tl.Rows = append(r.tl.Rows, row)
}

// set moves a row to a state at a time.
func (r *recorder) set(label string, at time.Duration, state, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.rows[label]
	if !ok {
		return
	}
	segs := r.tl.Rows[i].Segments
	last := &segs[len(segs)-1]
	if last.State == state && last.Value == value {
		return
	}
	if last.From == at {
		last.State, last.Value = state, value
		return
	}
	last.To = at
	r.tl.Rows[i].Segments = append(segs, Segment{From: at, To: -1, State: state, Value: value})
}

func (r *recorder) replicaState(rep *replica, at time.Duration, state, value string) {
	r.set(rep.name, at, state, value)
}

func (r *recorder) pairState(label string, at time.Duration, state, value string) {
	r.set(label, at, state, value)
}

func (r *recorder) beginStep(n int, at time.Duration, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Steps = append(r.tl.Steps, StepSpan{Number: n, Text: text, From: at, To: -1})
}

func (r *recorder) endStep(n int, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.tl.Steps {
		if r.tl.Steps[i].Number == n {
			r.tl.Steps[i].To = at
		}
	}
}

func (r *recorder) mark(at time.Duration, kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Marks = append(r.tl.Marks, Mark{At: at, Kind: kind, Text: text})
}

func (r *recorder) note(at time.Duration, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Notes = append(r.tl.Notes, Mark{At: at, Kind: "note", Text: text})
}

// callOutcome is how a call recorded on a timeline ended.
type callOutcome uint8

const (
	callFailed callOutcome = iota
	callOK
	callAbandoned // it ended because its caller stopped or the run ended
)

// outcomeOf is the outcome of a call that returned err, abandoned or not.
func outcomeOf(err error, abandoned bool) callOutcome {
	switch {
	case err == nil:
		return callOK
	case abandoned:
		return callAbandoned
	}
	return callFailed
}

func (r *recorder) call(at time.Duration, label string, outcome callOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, found := r.calls[label]
	if !found {
		i = len(r.tl.Calls)
		r.calls[label] = i
		r.tl.Calls = append(r.tl.Calls, CallSeries{Label: label})
	}
	s := &r.tl.Calls[i]
	switch outcome {
	case callOK:
		s.OK = append(s.OK, at)
	case callAbandoned:
		s.Abandoned = append(s.Abandoned, at)
	default:
		s.Failed = append(s.Failed, at)
	}
}

// finish closes every open segment at the end of the run.
func (r *recorder) finish(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tl.Duration = at
	for i := range r.tl.Rows {
		segs := r.tl.Rows[i].Segments
		if last := &segs[len(segs)-1]; last.To < 0 {
			last.To = at
		}
	}
	for i := range r.tl.Steps {
		if r.tl.Steps[i].To < 0 {
			r.tl.Steps[i].To = at
		}
	}
	sort.SliceStable(r.tl.Calls, func(i, j int) bool { return r.tl.Calls[i].Label < r.tl.Calls[j].Label })
	sort.SliceStable(r.tl.Marks, func(i, j int) bool { return r.tl.Marks[i].At < r.tl.Marks[j].At })
}

// timeline returns the finished timeline.
func (r *recorder) timeline() *Timeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	tl := r.tl
	return &tl
}
