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
	return NewCAValid(name, time.Now().Add(-time.Minute), 24*time.Hour)
}

// NewCAValid makes a self-signed CA valid from notBefore for lifetime: a
// CA kept in files ([CA.WriteCAFiles], [LoadCA]) outlives the certificates
// it issues, so it is made for longer than [NewCA]'s day.
func NewCAValid(name string, notBefore time.Time, lifetime time.Duration) (*CA, error) {
	if lifetime <= 0 {
		return nil, errors.New("certs: a CA's lifetime must be positive")
	}
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
	cert, err := sign(tmpl, key, nil, notBefore, lifetime)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key}, nil
}

// LoadCA reads a CA written by [CA.WriteCAFiles] (or any ECDSA CA
// certificate and its PKCS #8 or SEC 1 key in PEM), so that certificates
// can be issued from it again later: for a rotation, or for a new peer.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("certs: %s holds no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA certificate", certFile)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("certs: %s holds no PEM key", keyFile)
	}
	var key *ecdsa.PrivateKey
	switch kb.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: %s: %w", keyFile, err)
		}
		var ok bool
		if key, ok = k.(*ecdsa.PrivateKey); !ok {
			return nil, fmt.Errorf("certs: %s is a %T, not an ECDSA key", keyFile, k)
		}
	case "EC PRIVATE KEY":
		if key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
			return nil, fmt.Errorf("certs: %s: %w", keyFile, err)
		}
	default:
		return nil, fmt.Errorf("certs: %s holds a %q block, not a private key", keyFile, kb.Type)
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, fmt.Errorf("certs: %s is not the key of %s", keyFile, certFile)
	}
	return &CA{Cert: cert, key: key}, nil
}

// WriteCAFiles writes the CA's certificate and key as PEM (the key with
// mode 0600), creating their folders, so that [LoadCA] can issue from it
// later. Each file is written beside its final name and renamed into place.
func (ca *CA) WriteCAFiles(certFile, keyFile string) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return fmt.Errorf("certs: key: %w", err)
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return errors.Join(
		writeAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		writeAtomic(certFile, ca.PEM()),
	)
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
	cert, err := sign(tmpl, key, ca, notBefore, lifetime)
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
// paths; dir is created (mode 0700) if missing. It writes each file beside
// its final name and renames it into place, so a reader never sees half a
// file (a reader may see the new certificate beside the old key for a
// moment: [WriteDir] swaps a whole set at once).
func (ca *CA) WriteFiles(dir, base string, cert tls.Certificate) (certFile, keyFile, caFile string, err error) {
	chain, key, err := EncodePEM(cert)
	if err != nil {
		return "", "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("certs: %w", err)
	}
	certFile, keyFile, caFile = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"), filepath.Join(dir, "ca.crt")
	err = errors.Join(
		writeAtomic(certFile, chain),
		writeAtomic(keyFile, key),
		writeAtomic(caFile, ca.PEM()),
	)
	return certFile, keyFile, caFile, err
}

// EncodePEM returns cert's chain and its private key (PKCS #8) as PEM.
func EncodePEM(cert tls.Certificate) (chain, key []byte, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: key: %w", err)
	}
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return chain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
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

// sign makes the certificate tmpl describes, for key, valid from
// notBefore for lifetime, signed by issuer; a nil issuer makes it
// self-signed (a CA's own).
func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, issuer *CA, notBefore time.Time, lifetime time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("certs: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore
	tmpl.NotAfter = notBefore.Add(lifetime)
	parent, parentKey := tmpl, key
	if issuer != nil {
		parent, parentKey = issuer.Cert, issuer.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("certs: sign: %w", err)
	}
	return x509.ParseCertificate(der)
}
