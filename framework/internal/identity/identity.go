package identity

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstep-dev/lockstep/handshake"
)

// Scheme is the URI scheme of a lockstep identity in a certificate's URI
// SAN: lockstep://<component>/<name>.
const Scheme = "lockstep"

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
		return Scheme + "://" + id.Component
	}
	return Scheme + "://" + id.Component + "/" + id.Name
}

// FromCertificate reads the identity a certificate names, in this order:
//
//   - a URI SAN lockstep://<component>/<name> or lockstep://<component>
//     (a certificate with two lockstep URIs is refused: it would be two
//     identities);
//   - else its subject common name, naming the component alone;
//   - else its only DNS SAN, if that is a bare name without dots, naming the
//     component alone.
//
// Every part must pass [handshake.CheckName] and the component may not contain '/'.
func FromCertificate(cert *x509.Certificate) (Identity, error) {
	if cert == nil {
		return Identity{}, errors.New("no certificate")
	}
	var found []Identity
	for _, u := range cert.URIs {
		if u.Scheme != Scheme {
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
	if err := check(id); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// check holds an identity read from a certificate to the names the
// handshake accepts.
func check(id Identity) error {
	if err := handshake.CheckName("certificate component", id.Component); err != nil {
		return err
	}
	if strings.ContainsAny(id.Component, "/:@") {
		return fmt.Errorf("certificate component %q may not contain '/', ':' or '@'", id.Component)
	}
	if id.Name != "" {
		if err := handshake.CheckName("certificate name", id.Name); err != nil {
			return err
		}
	}
	return nil
}
