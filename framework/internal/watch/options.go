package watch

import (
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// Options are what a watch's options (framework.WatchOption) set.
type Options struct {
	// Selection is the watch's selection, by field name; fields named
	// twice are recorded in Dup, and refused.
	Selection map[string]string
	Dup       []string
	// Own gives the informer a stream of its own rather than a share of
	// its client's feed (the benchmarks' option).
	Own bool
	// DecodeEach makes the informer decode every frame itself.
	DecodeEach bool
}

// Option sets a watch's Options: framework.WatchOption. Its method names
// an internal type, so only the framework makes options.
type Option interface {
	ApplyWatch(*Options)
}

// OptionFunc is an Option made of a function.
type OptionFunc func(*Options)

// ApplyWatch applies f to o.
func (f OptionFunc) ApplyWatch(o *Options) { f(o) }

// Select selects the objects whose field holds value (framework.Select);
// a field selected twice is recorded in Dup.
func Select(field, value string) Option {
	return OptionFunc(func(o *Options) {
		if o.Selection == nil {
			o.Selection = map[string]string{}
		}
		if _, dup := o.Selection[field]; dup {
			o.Dup = append(o.Dup, field)
		}
		o.Selection[field] = value
	})
}

// NewOptions applies opts, nil ones aside, in order.
func NewOptions(opts []Option) Options {
	var o Options
	for _, opt := range opts {
		if opt != nil {
			opt.ApplyWatch(&o)
		}
	}
	return o
}

// CheckDup refuses, with invalid_argument, a watch of topic that selects
// on a field twice.
func (o Options) CheckDup(topic string) error {
	if len(o.Dup) > 0 {
		return apierror.Errorf(apierror.CodeInvalidArgument, "watch of %s selects on %s twice", topic, o.Dup[0])
	}
	return nil
}

// Writers is what a client knows of whether each of its topics has a live
// writer at one session's server: from the synced frames of its streams
// and from heartbeat answers. A new session knows nothing yet.
type Writers struct {
	mu    sync.Mutex
	known map[string]bool // topic → has a live writer
}

// Get returns whether topic has a live writer there, and whether that is
// known.
func (w *Writers) Get(topic string) (live, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	live, known = w.known[topic]
	return live, known
}

// Set records whether topic has a live writer; it reports a change.
func (w *Writers) Set(topic string, live bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.known[topic]; ok && old == live {
		return false
	}
	if w.known == nil {
		w.known = map[string]bool{}
	}
	w.known[topic] = live
	return true
}

// Learn applies a heartbeat answer's reports to the session: those of
// contract at version, the session's agreed version. It reports a change.
func (w *Writers) Learn(reports []wire.TopicWriterReport, contract, version string) bool {
	changed := false
	for _, r := range reports {
		if r.Contract == contract && r.Version == version {
			changed = w.Set(r.Topic, r.Writer) || changed
		}
	}
	return changed
}
