// Package wire holds the bodies and header values of lockstep's protocol
// that one side writes and the other reads: the batch call's
// {"items":[…]} and {"results":[…]}, and the multi-call envelope
// ({"calls":[…]}) that automatic batching sends and the server answers,
// with their one-pass readers and writers; the heartbeat's request and
// answer, with the report of a topic's writer it carries; the deadline
// header's format; and an answer's bounded read with the decoding of its
// error body.
//
// It is separate so that both sides read one definition: the server's
// handlers decode what the client's batcher, endpoints and heartbeat
// senders encode, and the client decodes what the server's handlers
// write, each through this package; it imports only the error shape
// (internal/apierror) and the one JSON scanner (jsonwire), never the
// framework.
package wire
