// Package dispatch is what happens to an admitted call's body between its
// admission and its handler: a call that carries an idempotency key runs
// its handler once, its replays answered from the record
// (framework/internal/replay), and a request that carries several calls
// is taken apart: a batch call's items are served one by one and in
// order, a multi-call's calls concurrently on a bounded number of
// goroutines, each with its own headers, deadline and result.
//
// It is separate because these rules are the same whatever the method,
// and nothing in them needs the framework's types: the framework admits
// the request, reads its body, and hands this package the serving of one
// call or item as a func value ([Items], [Multi].Call) and what it counts
// calls and refusals in ([Server]). It never imports the framework.
package dispatch
