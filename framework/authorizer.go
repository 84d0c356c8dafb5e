package framework

import (
	"context"
	"errors"

	"github.com/lockstep-dev/lockstep/handshake"
)

// EntryKind names a kind of request a server takes. Every kind passes the
// same admission step (docs/security.md), is seen by the [Authorizer], and
// is wrapped by the server's interceptors, which read it as [Call.Kind].
type EntryKind string

// The kinds of entry.
const (
	// EntryHandshake is POST /lockstep/handshake; Entry.Hello is the hello.
	EntryHandshake EntryKind = "handshake"
	// EntryCall is one unary call, one item of a batch call, or one call of
	// a multi-call; Entry.Request is its decoded request.
	EntryCall EntryKind = "call"
	// EntryTopicWrite is a client writer's topic write.
	EntryTopicWrite EntryKind = "topic_write"
	// EntryWatch is a watch stream's start.
	EntryWatch EntryKind = "watch"
	// EntryHeartbeat renews sessions.
	EntryHeartbeat EntryKind = "heartbeat"
	// EntrySessionClose closes sessions.
	EntrySessionClose EntryKind = "session_close"
	// EntryPlain is a call of a plain-serving route, which carries no
	// session.
	EntryPlain EntryKind = "plain"
	// EntryStatus is a read of the status page, the metrics or a binary's
	// own routes (Server.Handle).
	EntryStatus EntryKind = "status"
)

// Entry is one request as the [Authorizer] sees it, once the peer is
// authenticated and its session found.
type Entry struct {
	Kind EntryKind
	// Contract and Version name the contract version the entry is for
	// (empty for a heartbeat, a session close and a status read).
	Contract, Version string
	// Method is the method of a call; Topic the topic of a watch or topic
	// write.
	Method, Topic string
	// Peer is the requesting peer (also [PeerFromContext]).
	Peer *Peer
	// Hello is a handshake's hello.
	Hello *handshake.Hello
	// Request is a call's decoded request (*Req), for authorizers that
	// look at what is asked (a kubelet may report only its own node). For a
	// batch method it is one item.
	Request any
	// Item is the item's index in a batch call.
	Item int
	// OnBehalfOf is the client component an operator's identity (Peer)
	// asks on behalf of, for a dry-run handshake or a watch without a
	// session (protocol.HeaderOnBehalfOf); "" for every other entry.
	OnBehalfOf string
}

// Authorizer decides whether a peer may make an entry; an error refuses it
// (an error without a code travels as permission_denied). It runs in every
// entry's admission step after the peer is authenticated and its session
// bound, and, for calls, once the request is decoded and validated (once
// per batch item and per call of a multi-call), before the interceptors and
// the handler. It must not block: it runs on the request path.
type Authorizer interface {
	Authorize(ctx context.Context, e *Entry) error
}

// AuthorizerFunc is a function that is an [Authorizer].
type AuthorizerFunc func(ctx context.Context, e *Entry) error

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, e *Entry) error { return f(ctx, e) }

// authorize runs the server's authorizer on e; an uncoded refusal is
// permission_denied.
func (s *Server) authorize(ctx context.Context, e *Entry) error {
	if s.cfg.Authorizer == nil {
		return nil
	}
	err := s.cfg.Authorizer.Authorize(ctx, e)
	if err == nil {
		return nil
	}
	var coded *Error
	if !errors.As(err, &coded) {
		return NewError(CodePermissionDenied, err)
	}
	return err
}
