// Package replay holds a server's records of idempotency keys: a call
// that carries Lockstep-Idempotency-Key is recorded with its answer, so
// that a resend after the answer was lost is answered from the record
// instead of running the handler again.
//
// It is separate because the records are a store with rules of their own
// (their window, per-peer and total bounds, which record goes first, a
// record in flight never evicted) that nothing else in the server needs
// to see; the server names a record by its session (Key) and counts
// evictions through Store.Evicted. It never imports the framework.
package replay
