package discovery

import (
	"context"
	"slices"
	"sync"

	"github.com/lockstep-dev/lockstep/framework"
)

// Manual is a [framework.ReadinessSource] whose endpoints, and whether each
// is ready, its owner sets: the source to feed from what knows when a
// replica is back, such as an informer of Kubernetes EndpointSlices (each
// endpoint's ready condition) or of the peer's pods, or a test. A report
// that turns a known endpoint ready again tells every client running the
// source that its server listens again, and the process's prober of its
// address dials it at once (docs/discovery.md says which signal to feed
// it). Readiness does not decide routing: an endpoint that is not ready is
// handshaken and called as any other.
//
// One Manual may be the source of many clients; each Run sees every
// endpoint that came back, even when its not-ready and ready reports fell
// between two of its updates. The zero value is not usable: use
// [NewManual].
type Manual struct {
	mu  sync.Mutex
	eps []framework.EndpointReport // sorted by URL, one per URL, never modified once stored
	// back counts, per URL, the times the endpoint turned ready again.
	back    map[string]uint64
	changed chan struct{} // closed and replaced on every change
}

var _ framework.ReadinessSource = (*Manual)(nil)

// NewManual returns a source that reports eps at once, to every client
// that runs it.
func NewManual(eps ...framework.EndpointReport) *Manual {
	m := &Manual{back: map[string]uint64{}, changed: make(chan struct{})}
	m.eps = normalise(eps)
	return m
}

// normalise sorts eps by URL and keeps one report per URL: ready if any
// of its reports is.
func normalise(eps []framework.EndpointReport) []framework.EndpointReport {
	out := slices.Clone(eps)
	slices.SortStableFunc(out, func(a, b framework.EndpointReport) int {
		switch {
		case a.URL < b.URL:
			return -1
		case a.URL > b.URL:
			return 1
		case a.NotReady == b.NotReady:
			return 0
		case !a.NotReady:
			return -1
		}
		return 1
	})
	return slices.CompactFunc(out, func(a, b framework.EndpointReport) bool { return a.URL == b.URL })
}

// Set replaces the endpoints. An endpoint that was known and not ready and
// is ready in eps has come back.
func (m *Manual) Set(eps ...framework.EndpointReport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(normalise(eps))
}

// setLocked stores next, sorted and one per URL. m.mu is held.
func (m *Manual) setLocked(next []framework.EndpointReport) {
	for _, e := range next {
		if i, ok := m.find(e.URL); ok && m.eps[i].NotReady && !e.NotReady {
			m.back[e.URL]++
		}
	}
	for u := range m.back {
		if _, ok := slices.BinarySearchFunc(next, u, byURL); !ok {
			delete(m.back, u)
		}
	}
	m.eps = next
	close(m.changed)
	m.changed = make(chan struct{})
}

// SetReady sets whether the endpoint at url is ready; it reports false,
// changing nothing, when url is not one of the endpoints.
func (m *Manual) SetReady(url string, ready bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.find(url)
	if !ok {
		return false
	}
	next := slices.Clone(m.eps)
	next[i].NotReady = !ready
	m.setLocked(next)
	return true
}

// Endpoints returns the endpoints as they are now.
func (m *Manual) Endpoints() []framework.EndpointReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.eps)
}

func byURL(e framework.EndpointReport, url string) int {
	switch {
	case e.URL < url:
		return -1
	case e.URL > url:
		return 1
	}
	return 0
}

// find returns the index of url in m.eps. m.mu is held.
func (m *Manual) find(url string) (int, bool) {
	return slices.BinarySearchFunc(m.eps, url, byURL)
}

// current returns the endpoints, how often each came back, and a channel
// closed on the next change.
func (m *Manual) current() ([]framework.EndpointReport, map[string]uint64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	back := make(map[string]uint64, len(m.back))
	for u, n := range m.back {
		back[u] = n
	}
	return m.eps, back, m.changed
}

// Run reports the endpoints' URLs, ready or not, at once and whenever the
// set of URLs changes, until ctx ends: a client that does not take
// readiness sees the endpoints only.
func (m *Manual) Run(ctx context.Context, update func(urls []string)) {
	var sent []string
	sentAny := false
	for {
		eps, _, changed := m.current()
		urls := make([]string, len(eps))
		for i, e := range eps {
			urls[i] = e.URL
		}
		if !sentAny || !slices.Equal(urls, sent) {
			update(urls)
			sent, sentAny = urls, true
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// RunReadiness reports the endpoints with their readiness at once and on
// every change, until ctx ends. An endpoint that went not ready and ready
// again between two updates is reported not ready first, then ready, so
// the client hears that it came back.
func (m *Manual) RunReadiness(ctx context.Context, update func(endpoints []framework.EndpointReport)) {
	var sent []framework.EndpointReport
	sentBack := map[string]uint64{}
	sentAny := false
	for {
		eps, back, changed := m.current()
		var missed []framework.EndpointReport
		for i, e := range eps {
			j, ok := slices.BinarySearchFunc(sent, e.URL, byURL)
			if ok && !sent[j].NotReady && !e.NotReady && back[e.URL] != sentBack[e.URL] {
				if missed == nil {
					missed = slices.Clone(eps)
				}
				missed[i].NotReady = true
			}
		}
		if missed != nil {
			update(missed)
		}
		if !sentAny || missed != nil || !slices.Equal(eps, sent) {
			update(slices.Clone(eps))
			sent, sentBack, sentAny = eps, back, true
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
