package kubelet

import (
	"crypto/tls"
	"crypto/x509"
	"time"

	"github.com/lockstep-dev/lockstep/framework/certs"
)

// NodeCertificates returns a [Config.NodeTLS] that issues each node a
// certificate of its own from ca, naming it lockstep://kubelet/<node>, as a
// cluster's CA signs each kubelet's client certificate: the node
// controller then lets each node's identity report that node and no other.
// The node controller's certificate must chain to roots and name
// serverName (default: the host dialled). Each certificate costs a P-256
// key and a signature, once, when the kubelet is built. Each node keeps
// the TLS sessions its server gave it (a cache of a few, as the
// framework's own credentials keep theirs), so that a connection it opens
// beside the first (a heartbeat due while a report is in flight, say)
// resumes a session rather than making a full handshake, a signature and
// a verification on both sides.
func NodeCertificates(ca *certs.CA, roots *x509.CertPool, serverName string) func(node string) (*tls.Config, error) {
	return func(node string) (*tls.Config, error) {
		cert, err := ca.Issue(certs.Spec{Component: "kubelet", Name: node, Lifetime: 24 * time.Hour})
		if err != nil {
			return nil, err
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: serverName, Certificates: []tls.Certificate{cert},
			ClientSessionCache: tls.NewLRUClientSessionCache(4)}, nil
	}
}
