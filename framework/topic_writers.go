package framework

import "sync"

// Writer-aware routing. Replicas do not share topics, so a watcher of a
// server-written topic must watch a replica whose writer is attached (the
// elected leader, say): the others hold no topic, or a stale one. A server
// says whether each topic has a live writer in the synced frame of every
// watch stream, in every heartbeat answer and in its status; an informer
// uses it to pick its replica, to move when the writer moves, and to never
// take a writer-less replica's topic for the truth (docs/topics.md).

// Attach makes the server's writer of the topic live: watchers are told,
// in the synced frame and in heartbeat answers, that this replica's topic
// is the one to watch. A writer is attached when [ServeTopic] makes it,
// unless given [WithWriterDetached]. A replica that takes over writing (a
// newly elected leader) writes its state and then attaches.
func (w *TopicWriter[T]) Attach() {
	w.store.SetAttached(true)
	for _, f := range w.forks {
		f.store.SetAttached(true)
	}
}

// Detach makes the topic writer-less, as on a replica that lost its
// leadership: the objects stay as they are (watchers see nothing change,
// so none of them is shown an empty topic), but informers move to a
// replica whose writer is attached as soon as one is, and none syncs from
// this one meanwhile. Writes are still applied, so a detached writer can
// prepare its state before it attaches.
func (w *TopicWriter[T]) Detach() {
	w.store.SetAttached(false)
	for _, f := range w.forks {
		f.store.SetAttached(false)
	}
}

// Attached reports whether the writer is attached.
func (w *TopicWriter[T]) Attached() bool { return w.store.WriterLive() }

// WithWriterDetached makes [ServeTopic]'s writer start detached (see
// [TopicWriter.Detach]): a replica that is not the elected writer yet.
func WithWriterDetached() TopicOption {
	return topicOptionFunc(func(c *topicConfig) { c.Detached = true })
}

// sessionWriters is what a client knows of whether each of its topics has
// a live writer at one session's server: from the synced frames of its
// streams and from heartbeat answers. A new session knows nothing yet.
type sessionWriters struct {
	mu    sync.Mutex
	known map[string]bool // topic → has a live writer
}

// get returns whether topic has a live writer there, and whether that is
// known.
func (w *sessionWriters) get(topic string) (live, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	live, known = w.known[topic]
	return live, known
}

// set records whether topic has a live writer; it reports a change.
func (w *sessionWriters) set(topic string, live bool) bool {
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

// learnTopicWriter records what a server said of a topic's writer at a
// session and, when that changes, wakes whatever routes on it.
func (c *Client) learnTopicWriter(sess *clientSession, topic string, live bool) {
	if sess.writers.set(topic, live) {
		c.stateChanged()
	}
}

// learnTopicWriters applies a heartbeat answer's reports to a session:
// those of the session's contract at its agreed version.
func (c *Client) learnTopicWriters(sess *clientSession, reports []topicWriterReport) {
	if sess.version == nil {
		return
	}
	changed := false
	for _, r := range reports {
		if r.Contract == c.contract.Name() && r.Version == sess.version.contract.Version() {
			changed = sess.writers.set(r.Topic, r.Writer) || changed
		}
	}
	if changed {
		c.stateChanged()
	}
}

// writerEndpoints splits eps, endpoints that can carry a watch of topic
// (see [Client.watchEndpoints]), by what is known of topic's writer
// there: live, unknown, and writer-less.
func (c *Client) writerEndpoints(topic string, eps []*endpoint) (live, unknown, none []*endpoint) {
	for _, e := range eps {
		sess := e.routableSession()
		if sess == nil {
			continue
		}
		switch l, known := sess.writers.get(topic); {
		case !known:
			unknown = append(unknown, e)
		case l:
			live = append(live, e)
		default:
			none = append(none, e)
		}
	}
	return live, unknown, none
}
