// Package discovery tells a [framework.Client] where its peer's replicas are:
// it holds the [framework.EndpointSource] implementations that
// framework.ClientConfig.Source takes.
//
//   - [Static] is a fixed list of endpoint URLs, for peers whose addresses
//     are known ahead and for tests.
//   - [DNS] resolves a name and re-resolves it every [DNSConfig].Interval,
//     reporting the URL set again whenever it changes, so replicas that
//     come and go are handshaken and dropped by the client. It reads A and
//     AAAA records (a host name and a fixed port: one endpoint per address)
//     or SRV records (one endpoint per target and port).
//   - [Manual] is a set its owner updates, each endpoint with its
//     readiness (a [framework.ReadinessSource]): fed from what knows when
//     a replica is back (an informer of EndpointSlices or of the peer's
//     pods), it is the way to a reconnect at once. A report that an
//     endpoint is ready again makes every client of the process waiting
//     for it dial it at once, with one dial, where otherwise they find it
//     at the next dial of its prober (within 100 ms by default).
//
// # Kubernetes
//
// On Kubernetes a client finds every replica of its peer through a headless
// Service (clusterIP: None) in front of the peer's pods: its name has one A
// (or AAAA) record per pod, and one SRV record per pod and named port. The
// Service must set publishNotReadyAddresses: true. A lockstep component's
// readiness waits for a compatible peer, so during an upgrade the new pods
// stay unready until their clients have handshaken them, and their clients
// can only handshake them if DNS already lists them; without the setting
// the two wait for each other for ever. The client itself decides which
// endpoints to call: only those whose session agrees with it.
//
// # Failures
//
// A DNS outage must not empty a working endpoint set, and a deleted Service
// must. [DNS] therefore keeps its last good set on every resolution error
// (a timeout, a refused connection, SERVFAIL, REFUSED or any other answer
// code but NXDOMAIN, a malformed reply), logs it and tries again at the next
// interval; only an answer that says the name does not exist (NXDOMAIN) or
// has no records of the type asked for (NOERROR with an empty answer)
// empties the set. docs/discovery.md tells the whole story.
package discovery
