// Package protocol names the lockstep wire protocol (docs/protocol.md): the
// headers, paths, content types, watch frame types and closing reasons a
// peer must agree on byte for byte. It is exported as the wire contract
// that the framework, lockstepctl and peers in other languages share; it
// holds names only, no behaviour, and imports nothing, so a tool can speak
// the protocol without the runtime.
package protocol

// Headers of the protocol.
const (
	// HeaderSession carries the session token on every call.
	HeaderSession = "Lockstep-Session"
	// HeaderTimeout carries the caller's remaining deadline, gRPC-style
	// ("250m" is 250 milliseconds).
	HeaderTimeout = "Lockstep-Timeout"
	// HeaderDraining is "1" on every answer of a server that is shutting
	// down: clients stop sending it new calls.
	HeaderDraining = "Lockstep-Draining"
	// HeaderIdempotencyKey marks a call the client may retry after a
	// transport failure, like an idempotent method.
	HeaderIdempotencyKey = "Lockstep-Idempotency-Key"
	// HeaderReplayed is "1" on the answer of a call that carried an
	// idempotency key already answered within the server's window: the
	// answer is the recorded one, and no handler ran for this call.
	HeaderReplayed = "Lockstep-Replayed"
	// HeaderNotProcessed is "1" on an error answer whose call never reached a
	// handler, so the client may resend it anywhere.
	HeaderNotProcessed = "Lockstep-Not-Processed"
	// HeaderUnrecorded is "1" on a draining server's not-processed refusal
	// of a call that carries an idempotency key the server holds no record
	// of: no call with that key ran there, so the client may send it to
	// another server even after an earlier attempt's answer was lost.
	// Without it, a not-processed refusal speaks of that request only (a
	// draining server's refusal written on an idle connection reads no
	// request at all), and the key may still have run there.
	HeaderUnrecorded = "Lockstep-Unrecorded"
	// HeaderResync is "1" on a call's answer when the server asks the
	// session to send its full state again (as heartbeat answers do), so a
	// client whose calls keep its session alive without heartbeats hears it.
	HeaderResync = "Lockstep-Resync"
	// HeaderResumed is "1" on the answer of a watch stream that resumes
	// from the request's resume point (QuerySince): its frames before
	// synced are the changes since, not a snapshot.
	HeaderResumed = "Lockstep-Resumed"
	// HeaderOnBehalfOf names the client component an operator's identity
	// asks on behalf of, on a dry-run handshake (whose hello claims that
	// component) or on a watch without a session: the one exception to
	// "the certificate names the component the entry claims"
	// (docs/security.md). Such an entry opens no session.
	HeaderOnBehalfOf = "Lockstep-On-Behalf-Of"
)

// Fixed paths of the protocol.
const (
	// PathHandshake is POST: a hello, answered by a welcome or a refusal.
	PathHandshake = "/lockstep/handshake"
	// PathSession is DELETE: close the sessions named in the body.
	PathSession = "/lockstep/session"
	// PathHeartbeat is POST: renew the sessions named in the body.
	PathHeartbeat = "/lockstep/heartbeat"
	// PathStatus is GET: what the server serves and who it talks to.
	PathStatus = "/lockstep/status"
	// PathPrefix starts every path of the protocol.
	PathPrefix = "/lockstep/"
)

// QueryDryRun is the query parameter ("dryRun=1") that makes a handshake a
// dry run: the server answers what it would answer, but opens no session.
// Operators' tools ask with it whether a client would be accepted.
const QueryDryRun = "dryRun"

// QuerySince is the query parameter of a watch request that carries the
// watcher's resume point, "<history>.<revision>" (the synced frame's
// history and the revision of the last change read): the server then sends
// only the changes since, when it still can, instead of a snapshot.
const QuerySince = "since"

// CallPath returns the path of a method at a contract version:
// /lockstep/<contract>/<version>/<Method>.
func CallPath(contract, version, method string) string {
	return PathPrefix + contract + "/" + version + "/" + method
}

// WatchPath returns the path of a topic's watch stream at a contract
// version: /lockstep/<contract>/<version>/watch/<Topic>.
func WatchPath(contract, version, topic string) string {
	return PathPrefix + contract + "/" + version + "/watch/" + topic
}

// TopicPath returns the path client writers write a topic at:
// /lockstep/<contract>/<version>/topics/<Topic>.
func TopicPath(contract, version, topic string) string {
	return PathPrefix + contract + "/" + version + "/topics/" + topic
}

// MultiCallMethod is the method segment of the generic multi-call endpoint,
// POST /lockstep/<contract>/<version>/_multi: several unary calls of one
// session in one request. Method names start with a letter, so it never
// collides with one.
const MultiCallMethod = "_multi"

// Content types of the protocol.
const (
	// ContentTypeJSON is the content type of every request and answer
	// but watch streams.
	ContentTypeJSON = "application/json"
	// ContentTypeNDJSON is the content type of a watch stream: one JSON
	// frame per line.
	ContentTypeNDJSON = "application/x-ndjson"
)

// Types of the frames of a watch stream (the "type" field of each line).
const (
	// FrameSet is a key's current object.
	FrameSet = "set"
	// FrameDelete is a key's removal.
	FrameDelete = "delete"
	// FrameSynced follows the snapshot: every key was sent once.
	FrameSynced = "synced"
	// FramePing keeps a quiet stream's connection visibly alive.
	FramePing = "ping"
	// FrameClosing ends a stream, with one of the Close reasons.
	FrameClosing = "closing"
)

// Reasons a closing frame gives for ending a watch stream.
const (
	// CloseDraining: the server is shutting down; watch another endpoint.
	CloseDraining = "draining"
	// CloseSessionLost: the watcher's session ended; handshake again.
	CloseSessionLost = "session_lost"
	// CloseOverflow: the watcher fell too far behind; watch again for a
	// fresh snapshot.
	CloseOverflow = "overflow"
)
