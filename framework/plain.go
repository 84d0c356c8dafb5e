package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Plain serving: one contract version served to callers that do not
// handshake, such as a Kubernetes kube-scheduler calling a scheduler
// extender. Such a caller cannot take part in version negotiation, so the
// server's operator pins the version for it, as a client pins an external
// peer ([PinnedPeer]): the plain paths are that version's declared paths,
// and the calls reach the very handlers (interceptors, fork conversions
// and validation included) that the version's sessions reach.

// ServePlain serves contract version c to callers that do not handshake:
// every method of c that declares a path is served at prefix + path
// (prefix is a Kubernetes scheduler configuration's urlPrefix path, "" for
// none), POST only. A request is decoded and validated exactly as a call
// in a session is (the version's generated decoding, case-insensitive
// where the contract says so, and its schemas), runs the server's
// interceptors and the handler registered for the method, and is answered
// with the method's response as JSON, or with lockstep's error shape and
// its code's HTTP status.
//
// Call it after registering c's handlers ([HandleUnary], [ForkUnary],
// generated Register functions). It panics on setup mistakes: c not
// served, a method with a path but no handler, a contract without paths,
// unary methods only, once the server has started.
//
// A plain call has no session: handlers see a [Call] without a peer, and
// [PlainRequest] returns its HTTP request. It is served while the server
// drains (its caller has no other replica to be sent to) and counted in
// the drain's calls in flight.
func (s *Server) ServePlain(c *Contract, prefix string) {
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		prefix = ""
	}
	served := 0
	for _, method := range c.Methods() {
		decl, _ := c.Method(method)
		if decl.Path == "" {
			continue
		}
		if decl.Batch {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s is a batch method; plain callers make unary calls", c.Name(), c.Version(), method))
		}
		mh := s.handlerOf(c, method)
		if mh == nil || s.lookup(c.Name()).versions[c.Version()].contract.Fingerprint() != c.Fingerprint() {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s has no handler; register the version's handlers first", c.Name(), c.Version(), method))
		}
		path := prefix + "/" + strings.TrimPrefix(decl.Path, "/")
		s.route(path, s.plainHandler(c, method, mh), false)
		served++
	}
	if served == 0 {
		panic(fmt.Sprintf("lockstep: plain serving: %s %s declares no method paths", c.Name(), c.Version()))
	}
}

type plainKey struct{}

// PlainRequest returns the HTTP request of a call served to a caller that
// does not handshake ([Server.ServePlain]), or nil for a call in a session.
func PlainRequest(ctx context.Context) *http.Request {
	r, _ := ctx.Value(plainKey{}).(*http.Request)
	return r
}

// plainHandler serves one method of c to plain callers, through the
// same admission (admit, EntryPlain), body reading and answer as a call
// in a session.
func (s *Server) plainHandler(c *Contract, method string, mh *methodHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, ow := s.observeAnswer(w, s.observeCall(c.Name(), c.Version(), method))
		defer ow.end()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.refuse(w, r, s.routingRefusal(r, Errorf(CodeNotFound, "%s is not served at %s: POST only", r.Method, r.URL.Path)))
			return
		}
		adm, err := s.admit(r, entry{kind: EntryPlain, contract: c.Name(), version: c.Version()})
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		defer adm.done()
		body, release, ok := s.readBody(w, r, adm)
		if !ok {
			return
		}
		defer release()
		ctx := context.WithValue(adm.ctx, plainKey{}, r.WithContext(adm.ctx))
		out, err := mh.serve(ctx, &Call{Kind: EntryPlain, Contract: c.Name(), Version: c.Version(), Method: method, Header: r.Header}, body)
		s.answer(ctx, w, adm, out, err)
	})
}
