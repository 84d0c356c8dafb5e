package watch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// fakeEndpoint is an endpoint as watch routing reads it; sess nil: no
// routable session.
type fakeEndpoint struct {
	url, why string
	sess     *fakeSession
}

func (e *fakeEndpoint) URL() string { return e.url }
func (e *fakeEndpoint) Why() string { return e.why }
func (e *fakeEndpoint) Session() Session {
	if e.sess == nil {
		return nil
	}
	return e.sess
}

// fakeSession agreed version; it cannot carry a watch when notWatchable
// says why.
type fakeSession struct {
	version, notWatchable string
	writers               Writers
}

func (s *fakeSession) Version() string   { return s.version }
func (s *fakeSession) Writers() *Writers { return &s.writers }
func (s *fakeSession) Watchable(string, []string) (string, bool) {
	return s.notWatchable, s.notWatchable == ""
}

// endpointWithWriter is an endpoint at 1.0.0 whose server said live of
// topic T's writer, or said nothing when known is false.
func endpointWithWriter(url string, live, known bool) *fakeEndpoint {
	e := &fakeEndpoint{url: url, sess: &fakeSession{version: "1.0.0"}}
	if known {
		e.sess.writers.Set("T", live)
	}
	return e
}

// A stream of a server-written topic takes the replicas whose writer is
// attached, else those it knows nothing of, and none while every one says
// the topic has no writer; a client-written topic's takes every carrier.
func TestCandidatesPreferAttachedWriters(t *testing.T) {
	live := endpointWithWriter("https://a", true, true)
	unknown := endpointWithWriter("https://b", false, false)
	none := endpointWithWriter("https://c", false, true)
	cannot := &fakeEndpoint{url: "https://d", sess: &fakeSession{version: "0.9.0", notWatchable: "0.9.0 declares no topic T"}}
	lost := &fakeEndpoint{url: "https://e", why: "https://e: connecting"}
	aware, plain := Want{Topic: "T", WriterAware: true}, Want{Topic: "T"}

	all := []*fakeEndpoint{live, unknown, none, cannot, lost}
	assert.Equal(t, []*fakeEndpoint{live, unknown, none}, Carriers(all, plain))
	assert.Equal(t, []*fakeEndpoint{live, unknown, none}, Candidates(all, plain))
	assert.Equal(t, []*fakeEndpoint{live}, Candidates(all, aware))
	assert.Equal(t, []*fakeEndpoint{unknown}, Candidates([]*fakeEndpoint{unknown, none, cannot}, aware))
	assert.Empty(t, Candidates([]*fakeEndpoint{none, cannot, lost}, aware), "every replica says there is no writer: wait")
}

// A stream leaves a session whose writer is gone only when another ready
// endpoint has it attached, and only for a server-written topic.
func TestWriterMovedOnlyToALiveWriter(t *testing.T) {
	from := endpointWithWriter("https://a", false, true)
	aware := Want{Topic: "T", WriterAware: true}
	readyCalls := 0
	ready := func(eps ...*fakeEndpoint) func() []*fakeEndpoint {
		return func() []*fakeEndpoint { readyCalls++; return eps }
	}
	assert.False(t, WriterMoved(from.Session(), aware, ready(from)), "no other writer to move to")
	assert.False(t, WriterMoved(from.Session(), aware, ready(from, endpointWithWriter("https://b", false, false))))
	assert.True(t, WriterMoved(from.Session(), aware, ready(from, endpointWithWriter("https://b", true, true))))
	assert.False(t, WriterMoved(from.Session(), Want{Topic: "T"}, ready(endpointWithWriter("https://b", true, true))),
		"a client-written topic's stream stays")
	calls := readyCalls
	assert.False(t, WriterMoved(endpointWithWriter("https://b", true, true).Session(), aware, ready()), "its writer is attached")
	assert.Equal(t, calls, readyCalls, "the ready endpoints are read only when the writer is gone")
}

// The blocked log names each endpoint's state, and for a session that
// cannot carry the watch the version it agreed and why.
func TestWhySaysEachEndpointsReason(t *testing.T) {
	w := Want{Topic: "T", WriterAware: true}
	assert.Equal(t, "no endpoint known", Why([]*fakeEndpoint{}, w))
	eps := []*fakeEndpoint{
		{url: "https://a", why: "https://a: connecting (dial refused)"},
		{url: "https://b", sess: &fakeSession{version: "0.9.0", notWatchable: "0.9.0 declares no topic T"}},
		endpointWithWriter("https://c", false, true),
		endpointWithWriter("https://d", true, true),
	}
	assert.Equal(t, "https://a: connecting (dial refused); https://b agreed 0.9.0: 0.9.0 declares no topic T; "+
		"https://c agreed 1.0.0: topic T has no writer attached; https://d agreed 1.0.0", Why(eps, w))
}
