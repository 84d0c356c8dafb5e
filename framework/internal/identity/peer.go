package identity

import (
	"context"
	"crypto/x509"
	"errors"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Peer is the other side of a server's request as the server knows it.
type Peer struct {
	// Identity is the peer's authenticated identity under mutual TLS. Without
	// it (plain HTTP, or TLS without client certificates) the server knows
	// only what the peer claims: Identity is then the component its hello or
	// session claims, and Authenticated is false.
	Identity Identity
	// Authenticated reports whether Identity comes from a verified
	// certificate.
	Authenticated bool
	// Instance is the client instance of the peer's session (empty before a
	// handshake, and for entries that carry no session).
	Instance string
	// Certificate is the peer's verified leaf certificate, or nil.
	Certificate *x509.Certificate

	// limitsKey is the key of the peer's limits on the server that
	// admitted it, for what a handler charges to it; "" on a Peer made
	// elsewhere. Only [SetLimitsKey] and [ShareKey] reach it, so that it
	// is no part of the type users see.
	limitsKey string
}

// SetLimitsKey records the key of p's limits on the server admitting it.
func SetLimitsKey(p *Peer, key string) { p.limitsKey = key }

// ShareKey is what a write made on p's behalf is charged to: its limits'
// key, or for a Peer the server did not admit, its identity.
func ShareKey(p *Peer) string {
	if p.limitsKey != "" {
		return p.limitsKey
	}
	return p.Identity.String()
}

type peerKey struct{}

// PeerFromContext returns the peer ctx carries ([WithPeer]), or nil.
func PeerFromContext(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

// WithPeer returns ctx carrying p, for [PeerFromContext].
func WithPeer(ctx context.Context, p *Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// EntryKind names a kind of request a server takes. Every kind passes the
// same admission step (docs/security.md), is seen by the [Authorizer], and
// is wrapped by the server's interceptors.
type EntryKind string

// The kinds of entry; framework.EntryHandshake and the others name these,
// where each is documented.
const (
	EntryHandshake    EntryKind = "handshake"
	EntryCall         EntryKind = "call"
	EntryTopicWrite   EntryKind = "topic_write"
	EntryWatch        EntryKind = "watch"
	EntryHeartbeat    EntryKind = "heartbeat"
	EntrySessionClose EntryKind = "session_close"
	EntryPlain        EntryKind = "plain"
	EntryStatus       EntryKind = "status"
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
	// Peer is the requesting peer (also framework.PeerFromContext).
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

// Authorize runs a on e (nil: everything is allowed); an uncoded refusal
// is permission_denied.
func Authorize(ctx context.Context, a Authorizer, e *Entry) error {
	if a == nil {
		return nil
	}
	err := a.Authorize(ctx, e)
	if err == nil {
		return nil
	}
	var coded *apierror.Error
	if !errors.As(err, &coded) {
		return apierror.NewError(apierror.CodePermissionDenied, err)
	}
	return err
}
