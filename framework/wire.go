package framework

// Header names of the lockstep protocol (docs/protocol.md).
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
	// HeaderNotProcessed is "1" on an error answer whose call never reached a
	// handler, so the client may resend it anywhere.
	HeaderNotProcessed = "Lockstep-Not-Processed"
	// HeaderResync is "1" on a call's answer when the server asks the
	// session to send its full state again (as heartbeat answers do), so a
	// client whose calls keep its session alive without heartbeats hears it.
	HeaderResync = "Lockstep-Resync"
)

// Paths of the lockstep protocol.
const (
	PathHandshake = "/lockstep/handshake"
	PathSession   = "/lockstep/session"
	PathHeartbeat = "/lockstep/heartbeat"
	PathStatus    = "/lockstep/status"
	pathPrefix    = "/lockstep/"
)

// QueryDryRun is the query parameter ("dryRun=1") that makes a handshake a
// dry run: the server answers what it would answer, but opens no session.
// Operators' tools ask with it whether a client would be accepted.
const QueryDryRun = "dryRun"

// CallPath returns the path of a method at a contract version:
// /lockstep/<contract>/<version>/<Method>.
func CallPath(contract, version, method string) string {
	return pathPrefix + contract + "/" + version + "/" + method
}

const contentTypeJSON = "application/json"
