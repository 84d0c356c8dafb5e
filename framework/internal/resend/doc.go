// Package resend is the client's request path: one attempt of a request to
// an endpoint ([Target.Send], which says how far a failed attempt got), the
// one table that decides from what an attempt got whether the request is
// done, resent or failed ([Classify]), what an attempt's outcome does to
// the endpoint's session ([Target.Settle]), and the loop that resends a
// call as the table says, pinned to one server instance once a keyed call
// may have run there ([Call.Run]).
//
// It is separate because these rules are one job that every request the
// client makes goes through (unary calls, batches, multi-calls, topic
// writes, watch streams), and they know nothing of contracts, versions or
// the public Client: the client gives each endpoint its [Link] (where it
// is and how requests reach it), and the loop what it routes over
// ([Endpoint], [Session], [Call]'s Pick and Attempt).
package resend
