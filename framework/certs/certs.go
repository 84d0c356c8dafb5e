// Package certs makes throwaway certificate authorities and component
// certificates for tests, demos and local runs, with crypto/x509 only. A
// certificate names a lockstep identity the way the framework reads it: the
// URI SAN lockstep://<component>/<name> (see framework.IdentityFromCertificate).
//
// It is not a production CA: keys live in memory (or in files written with
// mode 0600), there is no revocation, and every certificate is valid for a
// fixed window from now. Production clusters issue certificates with a real
// CA (cert-manager on Kubernetes; see docs/security.md).
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// CA is a throwaway certificate authority.
type CA struct {
	// Cert is the CA's own certificate.
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA valid from a minute ago for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	cert, err := sign(tmpl, nil, key, nil, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key}, nil
}

// Pool returns a pool holding the CA, for RootCAs and ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// PEM returns the CA certificate in PEM form.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Spec says what a certificate names and when it is valid.
type Spec struct {
	// Component and Name make the URI SAN lockstep://<Component>/<Name>
	// (lockstep://<Component> when Name is empty). With Component empty the
	// certificate carries no lockstep URI.
	Component, Name string
	// CommonName is the subject's common name; default Component.
	CommonName string
	// DNSNames and IPs are the names a server certificate is valid for;
	// Server adds 127.0.0.1, ::1 and localhost to them.
	DNSNames []string
	IPs      []net.IP
	Server   bool
	// NotBefore defaults to a minute ago; Lifetime to an hour. An expired
	// certificate for tests: NotBefore two hours ago.
	NotBefore time.Time
	Lifetime  time.Duration
}

// Issue signs a certificate for spec, usable for both client and server
// authentication.
func (ca *CA) Issue(spec Spec) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: key: %w", err)
	}
	cn := spec.CommonName
	if cn == "" {
		cn = spec.Component
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    spec.DNSNames,
		IPAddresses: spec.IPs,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	if spec.Component != "" {
		u := &url.URL{Scheme: "lockstep", Host: spec.Component}
		if spec.Name != "" {
			u.Path = "/" + spec.Name
		}
		tmpl.URIs = []*url.URL{u}
	}
	if spec.Server {
		tmpl.DNSNames = append(tmpl.DNSNames, "localhost")
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	}
	notBefore := spec.NotBefore
	if notBefore.IsZero() {
		notBefore = time.Now().Add(-time.Minute)
	}
	lifetime := spec.Lifetime
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	cert, err := sign(tmpl, ca.Cert, key, ca.key, notBefore, lifetime)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

// MustIssue is Issue for tests and demos: it panics on failure, which only
// a broken random source causes.
func (ca *CA) MustIssue(spec Spec) tls.Certificate {
	c, err := ca.Issue(spec)
	if err != nil {
		panic(err)
	}
	return c
}

// WriteFiles writes cert's certificate and key as PEM to dir/<base>.crt and
// dir/<base>.key (mode 0600), and the CA to dir/ca.crt, returning the
// paths. It writes each file beside its final name and renames it into
// place, as a Secret volume update does, so a reader never sees half a file.
func (ca *CA) WriteFiles(dir, base string, cert tls.Certificate) (certFile, keyFile, caFile string, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", "", fmt.Errorf("certs: key: %w", err)
	}
	certFile, keyFile, caFile = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"), filepath.Join(dir, "ca.crt")
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	err = errors.Join(
		writeAtomic(certFile, chain),
		writeAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		writeAtomic(caFile, ca.PEM()),
	)
	return certFile, keyFile, caFile, err
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

func sign(tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey, notBefore time.Time, lifetime time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("certs: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore
	tmpl.NotAfter = notBefore.Add(lifetime)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("certs: sign: %w", err)
	}
	return x509.ParseCertificate(der)
}
