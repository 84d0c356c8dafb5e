// Package status is what GET /lockstep/status serves, and how: the wire
// form of a session's entry, the bounds that keep a served status small
// whatever its peers do (sessions taken in turns per identity, the first
// watchers of each topic), the page a person reads (chosen by the Accept
// header), and the handler a process that only calls serves in place of a
// server's. It is separate from the runtime because it only presents what
// the server or a client process gives it: framework.Server.Status and
// framework.NewClientStatusHandler build the status and hand it over.
package status
