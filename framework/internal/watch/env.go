package watch

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// Env is what the watch machinery takes from the client that owns it:
// package framework fills one per client entry point (Watch, a factory, a
// publisher). Every field is set.
type Env struct {
	// Ctx ends when the client closes: every feed, informer and publisher
	// of the client ends with it.
	Ctx    context.Context
	Logger *slog.Logger
	Clock  clockwork.Clock
	// Backoff is the client's delay before the attempt after n failures.
	Backoff func(n int) time.Duration
	// MaxFrameBytes bounds a frame's line (ClientConfig.MaxResponseBytes).
	MaxFrameBytes int64
	// Contract and Version name the client's contract and its own version,
	// in logs and names.
	Contract, Version string
	// MaxQueued bounds the changed keys an informer holds unprocessed;
	// beyond it (a writer churning through more distinct keys than a
	// topic may hold while a handler is stuck) it resyncs from its feed's
	// state.
	MaxQueued int
	// Extract returns ctx carrying what a write's header carried (its
	// trace context, through the client's propagator), or ctx itself.
	Extract func(ctx context.Context, header map[string]string) context.Context
	// EncodeHeader writes a frame's header member again, as a write's
	// header is written into its frame (nil when empty or too large).
	EncodeHeader func(header map[string]string) []byte
	// Inject returns what the client's propagator takes from ctx for a
	// write's header; nil when the client has none.
	Inject func(ctx context.Context) http.Header
	// WriterWatchers counts the informers of server-written topics: while
	// any run, the client's sessions heartbeat, since their answers say
	// where the topics' writers are.
	WriterWatchers *atomic.Int32
	// Changed returns a channel closed at the next change of the client's
	// routing.
	Changed func() <-chan struct{}
	// Feeds are the client's feeds, shared by its informers.
	Feeds *Feeds
	// Router picks the session of a feed's next stream; Writes carries a
	// publisher's writes.
	Router Router
	Writes Writes
}

// Want is what a feed's stream must be able to carry: a watch of Topic
// selecting by Fields (the selectors its query names); WriterAware for a
// server-written topic, whose stream goes to a replica with a live writer.
type Want struct {
	Topic       string
	Fields      []string
	WriterAware bool
}

// Router is the client's routing as feeds use it.
type Router interface {
	// Route waits, while ctx lives, for an endpoint whose session can
	// carry w, taking the candidates in turn: pick(n) chooses one of n.
	// For a server-written topic it picks among the replicas whose writer
	// is attached, then among those it knows nothing of yet. false: ctx
	// ended.
	Route(ctx context.Context, w Want, pick func(n int) int) (Conn, bool)
}

// Conn is the session of one endpoint that a feed's stream goes through,
// as [Router.Route] picked it.
type Conn interface {
	// URL names the endpoint, in logs and errors.
	URL() string
	// TTL is the session's time to live: a live stream carries a frame at
	// least every half of it.
	TTL() time.Duration
	// Open sends the watch request, with query (the selection and the
	// resume point, "" for none), at the session's version.
	Open(ctx context.Context, query string) (Opened, error)
	// Up converts an object of the session's version's form into the
	// client's current form: nil when they are the same.
	Up() func(object []byte) ([]byte, error)
	// Version is the session's agreed version, in logs.
	Version() string
	// Left reports whether the stream should end: the session left
	// routing (the endpoint was lost, is draining, or handshook again),
	// or, for a server-written topic, its writer is gone while another
	// replica's is attached.
	Left() bool
	// Closed takes the session out of routing as a closing frame's reason
	// says: the server drains, or it lost the session.
	Closed(reason string)
	// LearnWriter records what a synced frame said of the topic's writer
	// at this session.
	LearnWriter(live bool)
}

// Opened is what opening a stream got: its body, or none and whether the
// failure is the server's refusal (the first of a run is logged as a
// warning), not a transport failure or a session lost.
type Opened struct {
	Body    io.ReadCloser
	Resumed bool // the server resumes from the request's resume point
	Refused bool
}

// Writes is the client's routing as publishers use it.
type Writes interface {
	// Targets returns the routable endpoints whose session can carry the
	// client's topic writes.
	Targets() []Target
	// Wait returns the client's one wait for a routable endpoint, for the
	// write named what; closed ends it with closedErr.
	Wait(what string, closed <-chan struct{}, closedErr error) RouteWait
	// Post sends one topic write to t.
	Post(ctx context.Context, t Target, w Write) Result
}

// Write is one topic write: Body (the epoch, the sequence and the object
// or the delete) with Header, sent through Session, the session
// [Target.Session] returned.
type Write struct {
	Session any
	Topic   string
	Body    []byte
	Header  http.Header
}

// Target is an endpoint a publisher writes to; it is comparable, and
// equal for the same endpoint.
type Target interface {
	// URL names the endpoint, in logs.
	URL() string
	// Session returns the endpoint's routable session when it can carry
	// the client's topic writes, or nil.
	Session() any
	// Gone reports whether the client dropped the endpoint.
	Gone() bool
}

// RouteWait is one request's wait for a routable endpoint, counted as
// blocked time and logged while it lasts.
type RouteWait interface {
	// Until waits until ready reports true, which it calls each time
	// routing changes.
	Until(ctx context.Context, ready func() bool) error
	// Pace waits before the n-th attempt once something keeps refusing
	// the request.
	Pace(ctx context.Context, n int) error
	// Done ends the wait's accounting.
	Done()
}

// Result is the outcome of one write: Resend means the endpoint's
// session went away unprocessed or the write may not have arrived, so it
// is written again once the endpoint is routable.
type Result struct {
	Err    error
	Resend bool
}
