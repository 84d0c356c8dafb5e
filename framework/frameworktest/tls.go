package frameworktest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
)

// TLS is throwaway TLS material for tests: a CA, a server certificate for
// 127.0.0.1, ::1 and localhost, and a client certificate naming a component.
type TLS struct {
	// Server is the server side's configuration; it asks for and verifies
	// client certificates signed by the CA.
	Server *tls.Config
	// Client trusts the CA and presents the client certificate.
	Client *tls.Config
	// CAPool holds the CA, for configurations of your own.
	CAPool *x509.CertPool
	// CA issues further certificates ([NewCredentials]).
	CA *certs.CA
}

// NewTLS makes a CA and certificates valid for an hour. clientComponent is
// the client certificate's identity, lockstep://<clientComponent>.
func NewTLS(t testing.TB, clientComponent string) *TLS {
	t.Helper()
	ca := NewCA(t)
	srv := mustIssue(t, ca, certs.Spec{Component: "server", Server: true})
	cli := mustIssue(t, ca, certs.Spec{Component: clientComponent})
	pool := ca.Pool()
	return &TLS{
		Server: &tls.Config{
			Certificates: []tls.Certificate{srv},
			ClientCAs:    pool,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			MinVersion:   tls.VersionTLS12,
		},
		Client: &tls.Config{
			Certificates: []tls.Certificate{cli},
			RootCAs:      pool,
			MinVersion:   tls.VersionTLS12,
		},
		CAPool: pool,
		CA:     ca,
	}
}

// NewCA makes a throwaway CA for a test.
func NewCA(t testing.TB) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA("lockstep test CA")
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	return ca
}

// NewCredentials issues a certificate for spec from ca (for 127.0.0.1, ::1
// and localhost as well, so it serves as a server's), writes it, its key and
// the CA into a directory of the test, and loads them as mutual TLS
// credentials (ServerConfig.MTLS; [framework.Credentials.Transport] for a
// client). Rewrite the files with [RotateCredentials].
func NewCredentials(t testing.TB, ca *certs.CA, spec certs.Spec) (*framework.Credentials, string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, caFile := writeCredentials(t, ca, dir, spec)
	// A short reload interval makes a rotation show at the next connection.
	creds, err := framework.LoadCredentials(framework.MTLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: caFile,
		ReloadInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	return creds, dir
}

// RotateCredentials writes a new certificate for spec from ca into the
// directory NewCredentials returned, replacing the files in place as a
// Secret volume update does; the credentials pick it up at their next
// reload.
func RotateCredentials(t testing.TB, ca *certs.CA, dir string, spec certs.Spec) {
	t.Helper()
	writeCredentials(t, ca, dir, spec)
}

func writeCredentials(t testing.TB, ca *certs.CA, dir string, spec certs.Spec) (certFile, keyFile, caFile string) {
	t.Helper()
	spec.Server = true
	cert := mustIssue(t, ca, spec)
	certFile, keyFile, caFile, err := ca.WriteFiles(dir, "tls", cert)
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	return certFile, keyFile, caFile
}

func mustIssue(t testing.TB, ca *certs.CA, spec certs.Spec) tls.Certificate {
	t.Helper()
	c, err := ca.Issue(spec)
	if err != nil {
		t.Fatalf("frameworktest: %v", err)
	}
	return c
}
