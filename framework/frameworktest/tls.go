package frameworktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
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
}

// NewTLS makes a CA and certificates valid for an hour. clientComponent is
// the client certificate's common name.
func NewTLS(t testing.TB, clientComponent string) *TLS {
	t.Helper()
	caKey, caCert := mustCert(t, nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "lockstep test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	})
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	srvKey, srvCert := mustCert(t, caKey, caCert, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "lockstep test server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	cliKey, cliCert := mustCert(t, caKey, caCert, &x509.Certificate{
		Subject:     pkix.Name{CommonName: clientComponent},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return &TLS{
		Server: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey, Leaf: srvCert}},
			ClientCAs:    pool,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			MinVersion:   tls.VersionTLS12,
		},
		Client: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey, Leaf: cliCert}},
			RootCAs:      pool,
			MinVersion:   tls.VersionTLS12,
		},
		CAPool: pool,
	}
}

func mustCert(t testing.TB, parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("frameworktest: key: %v", err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatalf("frameworktest: serial: %v", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatalf("frameworktest: certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("frameworktest: parse certificate: %v", err)
	}
	return key, cert
}
