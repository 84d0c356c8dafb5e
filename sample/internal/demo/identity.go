package demo

import (
	"fmt"
	"os"
	"sync"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
)

// identities are the demo's certificates: a throwaway CA of the run's own,
// and for each component one certificate naming it by URI SAN,
// lockstep://<component>/<name>, so every server requires and verifies its
// clients' certificates and binds their sessions to them (docs/security.md)
// as a cluster running the sample with cert-manager would.
type identities struct {
	ca  *certs.CA
	dir string

	mu    sync.Mutex
	creds map[string]*framework.Credentials
}

func newIdentities() (*identities, error) {
	ca, err := certs.NewCA("lockstep demo CA")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockstep-demo-certs-")
	if err != nil {
		return nil, err
	}
	return &identities{ca: ca, dir: dir, creds: map[string]*framework.Credentials{}}, nil
}

// of returns the credentials of lockstep://component/name, issuing them
// the first time: a certificate valid as a server's on 127.0.0.1 and as a
// client's, its key and the CA, written to files as a Secret volume holds
// them.
func (ids *identities) of(component, name string) (*framework.Credentials, error) {
	key := component + "/" + name
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if c := ids.creds[key]; c != nil {
		return c, nil
	}
	cert, err := ids.ca.Issue(certs.Spec{Component: component, Name: name, Server: true})
	if err != nil {
		return nil, err
	}
	certFile, keyFile, caFile, err := ids.ca.WriteFiles(ids.dir, component+"-"+name, cert)
	if err != nil {
		return nil, err
	}
	c, err := framework.LoadCredentials(framework.MTLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: caFile})
	if err != nil {
		return nil, fmt.Errorf("demo: credentials of %s: %w", key, err)
	}
	ids.creds[key] = c
	return c, nil
}

// close removes the certificates' files.
func (ids *identities) close() error { return os.RemoveAll(ids.dir) }
