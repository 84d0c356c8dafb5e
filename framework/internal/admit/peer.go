package admit

import (
	"context"
	"encoding/json"
	"net"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
	"github.com/lockstep-dev/lockstep/framework/internal/metrics"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// authenticate returns the request's peer. Under mutual TLS it is the
// identity of the verified client certificate (unauthenticated without
// one); otherwise the component the peer claims (claimed), unauthenticated.
func (g *Gate[S]) authenticate(r *http.Request, claimed string) (*identity.Peer, error) {
	creds := g.cfg.MTLS
	if creds == nil {
		return &identity.Peer{Identity: identity.Identity{Component: claimed}}, nil
	}
	if r.TLS == nil {
		return nil, apierror.Errorf(apierror.CodeUnauthenticated, "mutual TLS is required")
	}
	v, err := creds.Verify(r.TLS.PeerCertificates)
	if err != nil {
		return nil, err
	}
	return v.Peer(), nil
}

// authorize runs the server's Authorizer on e; an uncoded refusal is
// permission_denied.
func (g *Gate[S]) authorize(ctx context.Context, e *identity.Entry) error {
	return identity.Authorize(ctx, g.cfg.Authorizer, e)
}

// checkClaim checks that an authenticated identity is the component its
// hello or session claims.
func checkClaim(p *identity.Peer, claimed string) error {
	if p.Authenticated && p.Identity.Component != claimed {
		return apierror.Errorf(apierror.CodePermissionDenied, "the client certificate names %s, which may not speak as %q", p.Identity, claimed)
	}
	return nil
}

// OnBehalfOf is the admission rule of the header Lockstep-On-Behalf-Of,
// the one exception to checkClaim: an operator's identity may ask on behalf
// of the client component claimed (a dry-run handshake's hello, a watch's
// contract client), where allowed (a dry run or a watch without a session;
// invalid_argument elsewhere), when its certificate names an operator
// (MTLSFiles.Operators; permission_denied otherwise) and the header names
// the component claimed (invalid_argument otherwise). Without mutual TLS
// nobody is authenticated and any peer may claim any component, so the
// header grants nothing a claim does not. It returns the component asked
// on behalf of, "" for a request without the header, which is held to
// checkClaim.
func (g *Gate[S]) OnBehalfOf(r *http.Request, p *identity.Peer, claimed string, allowed bool) (string, error) {
	behalf := r.Header.Get(protocol.HeaderOnBehalfOf)
	switch {
	case behalf == "":
		return "", checkClaim(p, claimed)
	case !allowed:
		return "", errOnBehalfNotAllowed()
	case p.Authenticated && !g.cfg.MTLS.IsOperator(p.Identity):
		return "", apierror.Errorf(apierror.CodePermissionDenied, "%s is not an operator identity, so it may not ask on behalf of %q", p.Identity, behalf)
	case behalf != claimed:
		return "", apierror.Errorf(apierror.CodeInvalidArgument, "%s names %q, but the entry is %q's", protocol.HeaderOnBehalfOf, behalf, claimed)
	}
	return behalf, nil
}

// errOnBehalfNotAllowed is the refusal of the header Lockstep-On-Behalf-Of
// on an entry other than a dry-run handshake or a watch without a session.
func errOnBehalfNotAllowed() error {
	return apierror.Errorf(apierror.CodeInvalidArgument, "%s is for dry-run handshakes and watches without a session only", protocol.HeaderOnBehalfOf)
}

// RefuseOnBehalf refuses the header Lockstep-On-Behalf-Of on the entries
// that may not carry it (calls, topic writes, watches with a session,
// heartbeats, session closes, plain-serving calls): ignored, it would let
// a client believe it was honoured.
func RefuseOnBehalf(r *http.Request) error {
	if r.Header.Get(protocol.HeaderOnBehalfOf) != "" {
		return errOnBehalfNotAllowed()
	}
	return nil
}

// Audit is one entry asked on behalf of a client component, as
// [Gate.AuditOnBehalf] records it.
type Audit struct {
	Kind identity.EntryKind
	// Peer is who asked; Behalf the client component asked for.
	Peer   *identity.Peer
	Behalf string
	// Contract and Version name what was asked (Version "" for a
	// handshake, which asks for none).
	Contract, Version string
	// Outcome is "accepted", a refusal reason or an error code
	// (OutcomeLabel).
	Outcome string
}

// AuditOnBehalf records an entry asked on behalf of a client component:
// one log line (who asked, for whom, what, the outcome) and the counter
// lockstep_on_behalf_total, whose labels come from what the server
// declares only.
func (g *Gate[S]) AuditOnBehalf(a Audit) {
	g.cfg.Logger.Info("lockstep: entry on behalf of a client component", "entry", a.Kind, "identity", a.Peer.Identity.String(),
		"onBehalfOf", a.Behalf, "contract", a.Contract, "version", a.Version, "outcome", a.Outcome)
	g.cfg.OnBehalf(a.Kind, a.Contract, a.Outcome)
}

// AuditAdmitted records the outcome of an entry admitted on behalf of a
// client component (a watch without a session); it does nothing for any
// other entry.
func (g *Gate[S]) AuditAdmitted(a *Admitted[S], outcome string) {
	if a.OnBehalf == "" {
		return
	}
	g.AuditOnBehalf(Audit{Kind: identity.EntryWatch, Peer: a.Peer, Behalf: a.OnBehalf, Contract: a.Sess.Contract(),
		Version: a.Sess.Version(), Outcome: outcome})
}

// OutcomeLabel is an entry's outcome as a label: "accepted" for none, else
// its refusal's reason or its code (metrics.ReasonLabel).
func OutcomeLabel(err error) string {
	if err == nil {
		return "accepted"
	}
	var r handshake.Refusal
	if e := apierror.As(err); json.Unmarshal(e.Details(), &r) == nil && r.Reason != "" {
		return metrics.ReasonLabel(string(r.Reason))
	}
	return metrics.ReasonLabel(string(apierror.CodeOf(err)))
}

// SameOwner reports whether p may use a session made by owner: under
// mutual TLS only the identity that made it.
func SameOwner(owner, p *identity.Peer) bool {
	if owner == nil || !owner.Authenticated {
		return !p.Authenticated
	}
	return p.Authenticated && owner.Identity == p.Identity
}

// LimitsKey names a peer for its limits: its identity under mutual TLS,
// else its claimed component at its remote IP address.
func LimitsKey(p *identity.Peer, r *http.Request) string {
	if p.Authenticated {
		return p.Identity.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return p.Identity.Component + "@" + host
}

// statusAllowed reports whether a request may read the status page, the
// metrics and a binary's own routes: anyone without mutual TLS (plain HTTP
// is loopback-only unless Insecure), only operator identities with it.
func (g *Gate[S]) statusAllowed(r *http.Request) (*identity.Peer, error) {
	if g.cfg.MTLS == nil {
		return &identity.Peer{}, nil
	}
	v, err := g.cfg.MTLS.Operator(r.TLS)
	if err != nil {
		return nil, err
	}
	p := v.Peer()
	return p, g.authorize(identity.WithPeer(r.Context(), p), &identity.Entry{Kind: identity.EntryStatus, Peer: p})
}

// OperatorOnly guards the status page and a binary's own routes: under
// mutual TLS only operator identities pass.
func (g *Gate[S]) OperatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := g.statusAllowed(r)
		if err != nil {
			g.Refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.WithPeer(r.Context(), p)))
	})
}
