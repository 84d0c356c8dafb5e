// Package watch is the client side of topics: the feed that reads one
// watch stream per client, topic and selection and hands its frames to
// every informer on it; the informer's cache, queue and handlers; shared
// informers with their indexes and listers, and the factory that makes
// them; the publisher of a topic whose writer is the client; and the
// rules of watch routing: which endpoints a stream takes (for a
// server-written topic, a replica whose writer is attached first), when
// it leaves one, and what the blocked log says while none will do.
//
// It is apart from package framework so that the rules of watching (one
// stream shared, the latest frame of each key queued, a resume point kept
// across streams, a writer's state republished to every replica) have one
// home a reader can hold whole. What it needs of the client that owns it
// (the client's life, logger, clock and backoff, the routing that picks an
// endpoint's session for a stream or a write, the trace propagator) it
// takes through [Env], which package framework fills, and it reads the
// client's endpoints as [Endpoint] presents them; it never imports
// package framework, whose public names for these types are aliases of
// the ones here.
package watch
