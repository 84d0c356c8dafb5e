package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework/internal/identity"
)

// IdentityScheme is the URI scheme of a lockstep identity in a certificate's
// URI SAN: lockstep://<component>/<name>.
const IdentityScheme = identity.Scheme

// OperatorComponent is the component of the identities that may read a
// server's status and metrics under mutual TLS by default
// (lockstep://operator/<name>); see [MTLSFiles].
const OperatorComponent = identity.OperatorComponent

// Identity is who a peer is, as its client certificate says: a component
// and, where the certificate names one, a name that stays the same across
// the peer's restarts (a node name, a pod name). Every holder of a
// certificate without a name is one identity: the server cannot tell them
// apart, so their sessions and limits are shared. Its String is the URI
// lockstep://<component>/<name>, or lockstep://<component> without a name.
// Identity and the other aliases of this file are framework/internal/
// identity's types, not copies: that package verifies certificates and
// authorizes entries, and the server's admission hands its values through
// to users' code as they are.
type Identity = identity.Identity

// IdentityFromCertificate reads the identity a certificate names, in this
// order:
//
//   - a URI SAN lockstep://<component>/<name> or lockstep://<component>
//     (a certificate with two lockstep URIs is refused: it would be two
//     identities);
//   - else its subject common name, naming the component alone;
//   - else its only DNS SAN, if that is a bare name without dots, naming the
//     component alone.
//
// Every part must pass [handshake.CheckName] and the component may not contain '/'.
func IdentityFromCertificate(cert *x509.Certificate) (Identity, error) {
	return identity.FromCertificate(cert)
}

// Peer is the other side of a server's request as the server knows it:
// its Identity (authenticated under mutual TLS, where Authenticated says
// so; else the component its hello or session claims), its session's
// client Instance, and its verified leaf Certificate, or nil. An alias of
// framework/internal/identity's, which finds a certificate's peer.
type Peer = identity.Peer

// PeerFromContext returns the peer of the request a handler, interceptor or
// [Authorizer] is serving, or nil outside one. On a client it is nil.
func PeerFromContext(ctx context.Context) *Peer { return identity.PeerFromContext(ctx) }

// withPeer returns ctx carrying p, for [PeerFromContext].
func withPeer(ctx context.Context, p *Peer) context.Context { return identity.WithPeer(ctx, p) }

// MTLSFiles names the PEM files mutual TLS is built from: the component's
// own certificate and key (presented to clients as a server, and to servers
// as a client) and the CA bundle the other side's certificate must chain
// to, with the client's ServerName, the Operators whose identities may read
// a server's status page and metrics ([OperatorComponent] by default), and
// how often the files are checked for a change (ReloadInterval, default
// 10s). The files are read again when they change, so a rotated
// certificate (a cert-manager Secret updated in its volume) takes effect
// without a restart. An alias of framework/internal/identity's Files,
// which that package watches and reloads.
type MTLSFiles = identity.Files

// HandshakeCounts is how many TLS handshakes credentials completed, as a
// server and as a client, full (certificates signed and verified, a fresh
// key exchange) and resumed from a session ticket (neither). Every new
// connection costs one: a count growing with the calls rather than with
// the peers means connections are not being reused. An alias of
// framework/internal/identity's, which counts them where TLS is set up.
type HandshakeCounts = identity.HandshakeCounts

// Credentials is mutual TLS material loaded from [MTLSFiles], reloaded as
// the files change. Pass it as ServerConfig.MTLS, and use
// [Credentials.Transport] (or [Credentials.ClientTLS]) on the client side.
type Credentials struct{ m *identity.Credentials }

// LoadCredentials reads the files once, failing on anything unreadable, and
// returns credentials that reload them as they change. A later reload that
// fails keeps the last good material and logs nothing itself: the error is
// returned by [Credentials.Reload] and shown by [Credentials.Err].
func LoadCredentials(files MTLSFiles) (*Credentials, error) {
	m, err := identity.Load(files)
	if err != nil {
		return nil, err
	}
	return &Credentials{m: m}, nil
}

// Handshakes returns the handshakes completed so far.
func (c *Credentials) Handshakes() HandshakeCounts { return c.m.Handshakes() }

// Reload reads the files now; unchanged files cost three reads and a
// comparison. On failure the last good material stays in use.
func (c *Credentials) Reload() error { return c.m.Reload() }

// Err returns the error of the last reload, or nil if it succeeded.
func (c *Credentials) Err() error { return c.m.Err() }

// ServerTLS returns the server side's TLS configuration: it serves the
// current certificate and asks every client for one, without failing the
// TLS handshake when there is none or it does not verify, so that the
// server can answer with a coded unauthenticated error (and so that
// Kubernetes probes, which present no certificate, still reach /healthz).
// The server verifies the certificate on every lockstep entry.
func (c *Credentials) ServerTLS() *tls.Config { return c.m.ServerTLS() }

// ClientTLS returns a client side's TLS configuration: it presents the
// current certificate (so a rotated one is used from the next connection),
// trusts the CA bundle as it is now, and resumes sessions made with the
// same material. Use [Credentials.Transport] to follow a rotated CA bundle
// as well.
func (c *Credentials) ClientTLS() *tls.Config { return c.m.ClientTLS() }

// Transport returns a client transport ([NewTransport]'s pool) that dials
// each new connection with the current certificate and CA bundle, verifying
// the server's certificate against serverName, or MTLSFiles.ServerName, or
// else the host dialled. Share it among a process's clients of one peer as
// ClientConfig.Transport.
func (c *Credentials) Transport(serverName string) *http.Transport {
	t := NewTransport(nil)
	// The default's dial, which watches for a peer's close, under TLS.
	t.DialTLSContext = c.m.DialTLS(serverName, t.DialContext)
	return t
}

// OperatorOnly serves next only to operator identities (MTLSFiles.Operators)
// with a verified certificate: others get permission_denied, requests
// without a certificate unauthenticated. A lockstep server applies it to its
// status page, metrics and [Server.Handle] routes itself; a binary serving
// such pages on a server of its own wraps them with it.
func (c *Credentials) OperatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.operator(r)
		if err != nil {
			// Refused outside a server's own routes, in the one error shape.
			e := asError(err)
			body, _ := json.Marshal(toWire(e))
			writeJSON(w, e.Code().HTTPStatus(), body)
			return
		}
		next.ServeHTTP(w, r.WithContext(withPeer(r.Context(), p)))
	})
}

// operator returns the request's peer if it is an operator identity.
func (c *Credentials) operator(r *http.Request) (*Peer, error) {
	v, err := c.m.Operator(r.TLS)
	if err != nil {
		return nil, err
	}
	return &Peer{Identity: v.Identity, Authenticated: true, Certificate: v.Certificate}, nil
}

// verifyCached returns the peer a client's certificate chain names once it
// verifies (unauthenticated when it does not), verified once per
// certificate and CA bundle.
func (c *Credentials) verifyCached(chain []*x509.Certificate) (*Peer, error) {
	v, err := c.m.Verify(chain)
	if err != nil {
		return nil, err
	}
	return &Peer{Identity: v.Identity, Authenticated: true, Certificate: v.Certificate}, nil
}

// EntryKind names a kind of request a server takes. Every kind is admitted
// over the same peer check and limits (docs/security.md; a handshake, a
// heartbeat or session close, and every other request each have their
// admission step), is seen by the [Authorizer], and is wrapped by the
// server's interceptors, which read it as [Call.Kind]. An alias of
// framework/internal/identity's, where the Authorizer's contract lives.
type EntryKind = identity.EntryKind

// The kinds of entry.
const (
	// EntryHandshake is POST /lockstep/handshake; Entry.Hello is the hello.
	EntryHandshake = identity.EntryHandshake
	// EntryCall is one unary call, one item of a batch call, or one call of
	// a multi-call; Entry.Request is its decoded request.
	EntryCall = identity.EntryCall
	// EntryTopicWrite is a client writer's topic write.
	EntryTopicWrite = identity.EntryTopicWrite
	// EntryWatch is a watch stream's start.
	EntryWatch = identity.EntryWatch
	// EntryHeartbeat renews sessions.
	EntryHeartbeat = identity.EntryHeartbeat
	// EntrySessionClose closes sessions.
	EntrySessionClose = identity.EntrySessionClose
	// EntryPlain is a call of a plain-serving route, which carries no
	// session.
	EntryPlain = identity.EntryPlain
	// EntryStatus is a read of the status page, the metrics or a binary's
	// own routes (Server.Handle).
	EntryStatus = identity.EntryStatus
)

// Entry is one request as the [Authorizer] sees it, once the peer is
// authenticated and its session found: its Kind, the Contract and Version
// it is for, a call's Method or a watch's or topic write's Topic, the
// Peer, a handshake's Hello, a call's decoded Request (one item of a
// batch, at Item), and the component an operator asks OnBehalfOf. An alias
// of framework/internal/identity's, which passes it to the Authorizer.
type Entry = identity.Entry

// Authorizer decides whether a peer may make an entry; an error refuses it
// (an error without a code travels as permission_denied). It runs in every
// entry's admission step after the peer is authenticated and its session
// bound, and, for calls, once the request is decoded and validated (once
// per batch item and per call of a multi-call), before the interceptors and
// the handler. It must not block: it runs on the request path. An alias of
// framework/internal/identity's, whose Authorize calls it (an uncoded
// refusal is permission_denied).
type Authorizer = identity.Authorizer

// AuthorizerFunc is a function that is an [Authorizer] (an alias of
// framework/internal/identity's, beside the Authorizer).
type AuthorizerFunc = identity.AuthorizerFunc

// authorize runs the server's authorizer on e; an uncoded refusal is
// permission_denied.
func (s *Server) authorize(ctx context.Context, e *Entry) error {
	return identity.Authorize(ctx, s.cfg.Authorizer, e)
}
