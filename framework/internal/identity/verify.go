package identity

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Verified is a peer whose certificate chain verified: the identity its
// leaf certificate names, and that certificate.
type Verified struct {
	Identity    Identity
	Certificate *x509.Certificate
}

// Peer is the authenticated peer v is.
func (v Verified) Peer() *Peer {
	return &Peer{Identity: v.Identity, Authenticated: true, Certificate: v.Certificate}
}

// verification is one cached result of verify.
type verification struct {
	generation uint64
	notAfter   time.Time
	peer       Verified
	err        error
}

// verifyCacheCap bounds the verified peers cached: room for the
// identities of a 10,000-node control plane several times over (each
// with its certificate and, while it rotates, the next), since a peer
// dropped verifies its chain again on its next request. refusedCacheCap
// bounds the certificates cached as not verifying; that cache is emptied
// when full.
const (
	verifyCacheCap  = 1 << 16
	refusedCacheCap = 4096
)

// Operator returns the peer of a connection if it is an operator identity
// with a verified certificate: unauthenticated without TLS or a
// certificate that verifies, permission_denied for another identity.
func (c *Credentials) Operator(conn *tls.ConnectionState) (Verified, error) {
	if conn == nil {
		return Verified{}, apierror.Errorf(apierror.CodeUnauthenticated, "mutual TLS is required")
	}
	p, err := c.Verify(conn.PeerCertificates)
	if err != nil {
		return Verified{}, err
	}
	if !c.IsOperator(p.Identity) {
		return Verified{}, apierror.Errorf(apierror.CodePermissionDenied, "%s is not an operator identity", p.Identity)
	}
	return p, nil
}

// verify checks a client's certificate chain against the current CA
// bundle, for client authentication, at the current time, and reads the
// identity it names. It returns unauthenticated for no certificate, one
// that does not chain to the CA, or one outside its validity period.
func (c *Credentials) verify(chain []*x509.Certificate) (Identity, *x509.Certificate, error) {
	if len(chain) == 0 {
		return Identity{}, nil, apierror.Errorf(apierror.CodeUnauthenticated, "a client certificate is required")
	}
	_, pool, _ := c.current()
	opts := x509.VerifyOptions{
		Roots:         pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, cert := range chain[1:] {
		opts.Intermediates.AddCert(cert)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return Identity{}, nil, apierror.Errorf(apierror.CodeUnauthenticated, "client certificate does not verify: %v", err)
	}
	id, err := FromCertificate(chain[0])
	if err != nil {
		return Identity{}, nil, apierror.Errorf(apierror.CodeUnauthenticated, "client certificate: %v", err)
	}
	return id, chain[0], nil
}

// Verify is the verification of a client's certificate chain (see verify)
// through the cache: a chain's leaf verified against the CA bundle in use,
// and not expired since, is not verified again.
func (c *Credentials) Verify(chain []*x509.Certificate) (Verified, error) {
	if len(chain) == 0 {
		return Verified{}, apierror.Errorf(apierror.CodeUnauthenticated, "a client certificate is required")
	}
	key := sha256.Sum256(chain[0].Raw)
	_, _, gen := c.current()
	now := time.Now()
	c.cacheMu.Lock()
	v := c.verified[key]
	if v == nil {
		v = c.refused[key]
	}
	c.cacheMu.Unlock()
	if v == nil || v.generation != gen || now.After(v.notAfter) || now.Before(chain[0].NotBefore) {
		id, cert, err := c.verify(chain)
		v = &verification{generation: gen, notAfter: chain[0].NotAfter, err: err,
			peer: Verified{Identity: id, Certificate: cert}}
		c.cacheMu.Lock()
		c.rememberLocked(key, v, gen, now)
		c.cacheMu.Unlock()
	}
	if v.err != nil {
		return Verified{}, v.err
	}
	return v.peer, nil
}

// rememberLocked caches v, the verification of the certificate whose
// hash is key against CA bundle gen at now. A full cache of verified peers
// makes room by dropping the entries of an earlier bundle or an expired
// certificate, then arbitrary ones (a map's order) down to seven eighths:
// room is made once for many certificates, and never by making every
// peer verify again at once. cacheMu must be held.
func (c *Credentials) rememberLocked(key [32]byte, v *verification, gen uint64, now time.Time) {
	if v.err != nil {
		// A certificate that verified under an earlier bundle and not
		// under this one: its stale entry would be found first, and the
		// refusal never.
		delete(c.verified, key)
		if c.refused == nil || len(c.refused) >= refusedCacheCap {
			c.refused = map[[32]byte]*verification{}
		}
		c.refused[key] = v
		return
	}
	delete(c.refused, key)
	if c.verified == nil {
		c.verified = map[[32]byte]*verification{}
	}
	if len(c.verified) >= verifyCacheCap {
		for k, old := range c.verified {
			if old.generation != gen || now.After(old.notAfter) {
				delete(c.verified, k)
			}
		}
		for k := range c.verified {
			if len(c.verified) < verifyCacheCap/8*7 {
				break
			}
			delete(c.verified, k)
		}
	}
	c.verified[key] = v
}
