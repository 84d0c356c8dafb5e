package framework

// Watches in fork mode: a client that also speaks earlier versions
// ([Fork]) watches an endpoint that agreed on one of them in that
// version's form, and converts each object up as its feed reads it, so
// that its informers hold the current form whichever replica they watch.

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// watchSession reports whether a session can carry a watch of topic that
// selects by fields: it agreed the client's own version, or a fork
// version that converts the topic (see [peerVersion.watchable]).
func (c *Client) watchSession(sess *clientSession, topic string, fields []string) bool {
	if sess.version == nil {
		return false
	}
	_, ok := sess.version.watchable(c.contract, topic, fields)
	return ok
}

// watchEndpoints returns the routable endpoints whose session can carry a
// watch of topic that selects by fields.
func (c *Client) watchEndpoints(topic string, fields []string) []*endpoint {
	ready := *c.ready.Load()
	out := make([]*endpoint, 0, len(ready))
	for _, e := range ready {
		if sess := e.routableSession(); sess != nil && c.watchSession(sess, topic, fields) {
			out = append(out, e)
		}
	}
	return out
}

// queryFields returns the selectors a watch request's query names.
func queryFields(query string) []string {
	if query == "" {
		return nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil
	}
	return sortedKeys(q)
}

// frame converts a set frame of an earlier version's form into the same
// frame carrying the object's current form; the frame's other members
// (key, version, revision) are the server's and stay as they were.
func (t *TopicConversion) frame(line []byte) ([]byte, error) {
	head, object, ok := frames.Read(line)
	if !ok {
		var full frames.Frame[json.RawMessage]
		if err := json.Unmarshal(line, &full); err != nil {
			return nil, err
		}
		head = full.Head
		if full.Object != nil {
			object = *full.Object
		}
	}
	if object == nil {
		return nil, Errorf(CodeInvalidArgument, "set frame of %q carries no object", head.Key)
	}
	up, err := t.up(object)
	if err != nil {
		return nil, err
	}
	ch, _ := encodeSetFrame(head.Key, ObjectVersion{Epoch: head.Epoch, Seq: head.Seq}, head.Rev, up, encodeChangeHeader(headerOf(head.Header)))
	return ch.frame, nil
}

// watchWhy says, for the blocked log, why no endpoint carries a watch of
// f's topic now: each endpoint's state, and for one whose session agreed
// a version the watch cannot travel at, that version and why not.
func (f *watchFeed) watchWhy() string {
	c := f.c
	c.mu.Lock()
	eps := make([]*endpoint, 0, len(c.endpoints))
	for _, base := range sortedKeys(c.endpoints) {
		eps = append(eps, c.endpoints[base])
	}
	c.mu.Unlock()
	if len(eps) == 0 {
		return "no endpoint known"
	}
	parts := make([]string, len(eps))
	for i, e := range eps {
		sess := e.routableSession()
		if sess == nil || sess.version == nil {
			parts[i] = e.why()
			continue
		}
		ver := sess.version.contract.Version()
		if why, ok := sess.version.watchable(c.contract, f.topic, f.fields); !ok {
			parts[i] = e.url + " agreed " + ver + ": " + why
			continue
		}
		if live, known := sess.writers.get(f.topic); known && !live {
			parts[i] = e.url + " agreed " + ver + ": topic " + f.topic + " has no writer attached"
			continue
		}
		parts[i] = e.url + " agreed " + ver
	}
	return strings.Join(parts, "; ")
}

// watchPath is the path of f's watch at the version sess agreed.
func (f *watchFeed) watchPath(sess *clientSession) string {
	return protocol.WatchPath(f.c.contract.Name(), sess.version.contract.Version(), f.topic)
}
