// Package wire holds the bodies of lockstep's calls as they travel: the
// batch call's {"items":[…]} and {"results":[…]}, and the multi-call
// envelope ({"calls":[…]}) that automatic batching sends and the server
// answers, with their one-pass readers and writers.
//
// It is separate so that both sides read one definition: the server's
// handlers decode what the client's batcher encodes, and the client
// decodes what the server's handlers write, each through this package;
// it imports only the error shape (internal/apierror) and the one JSON
// scanner (jsonwire), never the framework.
package wire
