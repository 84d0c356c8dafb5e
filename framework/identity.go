package framework

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/handshake"
)

// IdentityScheme is the URI scheme of a lockstep identity in a certificate's
// URI SAN: lockstep://<component>/<name>.
const IdentityScheme = "lockstep"

// OperatorComponent is the component of the identities that may read a
// server's status and metrics under mutual TLS by default
// (lockstep://operator/<name>); see [MTLS.Operators].
const OperatorComponent = "operator"

// Identity is who a peer is, as its client certificate says: a component
// and, where the certificate names one, a name that stays the same across
// the peer's restarts (a node name, a pod name). Every holder of a
// certificate without a name is one identity: the server cannot tell them
// apart, so their sessions and limits are shared.
type Identity struct {
	Component string
	Name      string
}

// String returns the identity as a URI: lockstep://<component>/<name>, or
// lockstep://<component> without a name.
func (id Identity) String() string {
	if id.Name == "" {
		return IdentityScheme + "://" + id.Component
	}
	return IdentityScheme + "://" + id.Component + "/" + id.Name
}

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
	if cert == nil {
		return Identity{}, errors.New("no certificate")
	}
	var found []Identity
	for _, u := range cert.URIs {
		if u.Scheme != IdentityScheme {
			continue
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
			return Identity{}, fmt.Errorf("URI SAN %s: only lockstep://<component>/<name> is an identity", u)
		}
		name := strings.TrimPrefix(u.Path, "/")
		if strings.Contains(name, "/") {
			return Identity{}, fmt.Errorf("URI SAN %s: the name may not contain '/'", u)
		}
		found = append(found, Identity{Component: u.Host, Name: name})
	}
	var id Identity
	switch {
	case len(found) > 1:
		return Identity{}, fmt.Errorf("certificate names %d lockstep identities; it must name one", len(found))
	case len(found) == 1:
		id = found[0]
	case cert.Subject.CommonName != "":
		id = Identity{Component: cert.Subject.CommonName}
	case len(cert.DNSNames) == 1 && !strings.Contains(cert.DNSNames[0], "."):
		id = Identity{Component: cert.DNSNames[0]}
	default:
		return Identity{}, errors.New("certificate names no lockstep identity (URI SAN lockstep://<component>/<name>, or a common name)")
	}
	if err := handshake.CheckName("certificate component", id.Component); err != nil {
		return Identity{}, err
	}
	if strings.ContainsAny(id.Component, "/:@") {
		return Identity{}, fmt.Errorf("certificate component %q may not contain '/', ':' or '@'", id.Component)
	}
	if id.Name != "" {
		if err := handshake.CheckName("certificate name", id.Name); err != nil {
			return Identity{}, err
		}
	}
	return id, nil
}

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

	// limitsKey is the key of the peer's limits (limitsKey) on the server
	// that admitted it, for what a handler charges to it
	// ([TopicWriter.SetFor]); "" on a Peer made elsewhere.
	limitsKey string
}

// shareKey is what a write made on the peer's behalf is charged to: its
// limits' key, or for a Peer the server did not admit, its identity.
func (p *Peer) shareKey() string {
	if p.limitsKey != "" {
		return p.limitsKey
	}
	return p.Identity.String()
}

type peerKey struct{}

// PeerFromContext returns the peer of the request a handler, interceptor or
// [Authorizer] is serving, or nil outside one. On a client it is nil.
func PeerFromContext(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

// withPeer returns ctx carrying p, for [PeerFromContext].
func withPeer(ctx context.Context, p *Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}
