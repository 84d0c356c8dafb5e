// Package admit is a server's admission step: the one path every entry a
// server takes passes through before its handler runs, and the one way a
// refused or failed entry is answered. It decides who a request's peer is
// (its verified certificate under mutual TLS, else what it claims),
// whether the session a request names is that peer's own, the rule of the
// header Lockstep-On-Behalf-Of and its audit, a draining server's refusal
// of calls, the per-peer limits, the Authorizer, and the body limits; it
// writes refusals and errors in the one error shape, with
// Lockstep-Not-Processed and the draining header where they apply, and
// observes calls for the server's observer. The three entries that are
// admission and the session table alone are served here whole: a
// handshake (its hello admitted, negotiated, held while ?wait= allows,
// and its session opened or its dry run answered), a heartbeat (the
// sessions it names renewed) and a session close.
//
// It is separate because these rules are one concern with an order of
// their own, which every way a request arrives (a call, a multi-call, a
// batch, a plain call, a topic write, a watch, a handshake, a heartbeat,
// a session close, a status read) must share: written in the server's
// files beside routing and dispatch, they were copied and drifted. It
// reads only the sessions, the limits, the mutual TLS material and the
// Authorizer, which the server gives it through [Config]; the session
// record stays with the server, which [Session] names what admission reads
// of. It never imports the framework.
//
// The order of the checks (docs/security.md lists it per kind):
//
//  1. draining: a call or topic write arriving at a draining server is
//     refused unprocessed with the draining header;
//  2. identity: under mutual TLS the client certificate is verified and the
//     identity it names read (unauthenticated otherwise);
//  3. session: the token is looked up and must belong to the same identity
//     (permission_denied otherwise: a token is no bearer credential);
//  4. authorization: the Authorizer sees the entry;
//  5. per-peer limits: rate, calls in flight, sessions and watchers;
//  6. body limits: a Content-Length over the limit is refused before
//     reading, the whole body must arrive within Limits.BodyReadTimeout, and
//     it must be valid UTF-8;
//
// then the entry is dispatched by the server, wrapped by its interceptors.
package admit
