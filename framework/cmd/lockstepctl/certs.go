package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/handshake"
)

// The layout `lockstepctl certs` keeps under its folder DIR:
//
//	DIR/ca/ca.crt               the current CA's certificate
//	DIR/ca/ca.key               its key (0600): keep DIR private
//	DIR/ca/bundle.crt           every CA peers trust now: the current one first,
//	                            then earlier ones until `certs ca --drop-old`
//	DIR/<component>/<name>/     one identity, shaped as a Kubernetes TLS Secret:
//	    tls.crt tls.key ca.crt  its certificate, its key and the bundle
//
// An identity's folder is replaced as one set (certs.WriteDir: the three
// names are links through ..data, swapped by one rename), so a component
// pointed at DIR/<component>/<name>/{tls.crt,tls.key,ca.crt} (the same
// names as in a cert-manager Secret volume) picks up a renewed certificate
// or a new bundle at its next reload, without a restart and without ever
// reading a certificate beside another's key.
const (
	caFolder   = "ca"
	caCertName = "ca.crt"
	caKeyName  = "ca.key"
	bundleName = "bundle.crt"
	tlsCert    = "tls.crt"
	tlsKey     = "tls.key"
	tlsCA      = "ca.crt"
)

const certsUsage = `usage:
  lockstepctl certs ca DIR [--name NAME] [--lifetime D] [--rotate | --drop-old]
  lockstepctl certs issue DIR COMPONENT/NAME [--dns N,…] [--ip A,…] [--loopback] [--lifetime D]
  lockstepctl certs operator DIR NAME [--lifetime D]`

func runCerts(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError("certs needs a subcommand\n%s", certsUsage)
	}
	switch args[0] {
	case "ca":
		return runCertsCA(args[1:], stdout)
	case "issue":
		return runCertsIssue(args[1:], stdout, "")
	case "operator":
		return runCertsIssue(args[1:], stdout, framework.OperatorComponent)
	}
	return usageError("unknown certs subcommand %q\n%s", args[0], certsUsage)
}

// runCertsCA makes the CA, rotates it, or drops the earlier ones from the
// bundle.
func runCertsCA(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("certs ca", flag.ContinueOnError)
	name := fs.String("name", "lockstep CA", "the CA certificate's common name")
	lifetime := fs.Duration("lifetime", 365*24*time.Hour, "how long the CA is valid")
	rotate := fs.Bool("rotate", false, "make a new CA; the current one stays in the bundle, so certificates it issued are trusted until --drop-old")
	dropOld := fs.Bool("drop-old", false, "trust only the current CA, once every identity under DIR is issued by it")
	pos, err := parse(fs, args, "DIR")
	if err != nil {
		return err
	}
	if *rotate && *dropOld {
		return usageError("give --rotate or --drop-old, not both")
	}
	dir := pos[0]
	certFile, keyFile := filepath.Join(dir, caFolder, caCertName), filepath.Join(dir, caFolder, caKeyName)
	_, statErr := os.Stat(certFile)
	exists := statErr == nil
	switch {
	case *dropOld:
		if !exists {
			return fmt.Errorf("no CA in %s: run lockstepctl certs ca %s first", dir, dir)
		}
		ca, err := certs.LoadCA(certFile, keyFile)
		if err != nil {
			return err
		}
		ids, err := identities(dir)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := id.leaf.CheckSignatureFrom(ca.Cert); err != nil {
				return fmt.Errorf("%s is not issued by the current CA: issue it again before dropping the old CA", id.dir)
			}
		}
		return writeBundle(stdout, dir, [][]byte{ca.Cert.Raw})
	case exists && !*rotate:
		return fmt.Errorf("%s already holds a CA: give --rotate to make a new one", dir)
	case !exists && *rotate:
		return fmt.Errorf("no CA in %s to rotate: run lockstepctl certs ca %s first", dir, dir)
	}
	var keep [][]byte
	if *rotate {
		// Every CA the bundle holds stays trusted while still valid: the
		// certificates issued by the one being replaced must go on
		// verifying until they are issued again.
		old, err := readBundle(filepath.Join(dir, caFolder, bundleName))
		if err != nil {
			return err
		}
		now := time.Now()
		for _, c := range old {
			if now.Before(c.NotAfter) {
				keep = append(keep, c.Raw)
			}
		}
	}
	ca, err := certs.NewCAValid(*name, time.Now().Add(-time.Minute), *lifetime)
	if err != nil {
		return err
	}
	if err := ca.WriteCAFiles(certFile, keyFile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "CA %q valid until %s: %s (key %s)\n", *name, ca.Cert.NotAfter.UTC().Format(time.RFC3339), certFile, keyFile)
	return writeBundle(stdout, dir, append([][]byte{ca.Cert.Raw}, keep...))
}

// writeBundle writes the bundle and hands it to every identity under dir,
// each folder replaced as one set.
func writeBundle(stdout io.Writer, dir string, ders [][]byte) error {
	var bundle []byte
	for _, der := range ders {
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	path := filepath.Join(dir, caFolder, bundleName)
	if err := writeFile(path, bundle); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bundle of %d CA certificate(s): %s\n", len(ders), path)
	ids, err := identities(dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		cert, err := os.ReadFile(filepath.Join(id.dir, tlsCert))
		if err != nil {
			return err
		}
		key, err := os.ReadFile(filepath.Join(id.dir, tlsKey))
		if err != nil {
			return err
		}
		if err := certs.WriteDir(id.dir, map[string][]byte{tlsCert: cert, tlsKey: key, tlsCA: bundle}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "bundle updated: %s\n", filepath.Join(id.dir, tlsCA))
	}
	return nil
}

// runCertsIssue issues (or issues again) one identity's certificate from
// the current CA. component is fixed for `certs operator`.
func runCertsIssue(args []string, stdout io.Writer, component string) error {
	name := "certs issue"
	positional := []string{"DIR", "COMPONENT/NAME"}
	if component != "" {
		name, positional = "certs operator", []string{"DIR", "NAME"}
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dns := fs.String("dns", "", "comma-separated DNS names the certificate serves (a server's Service names)")
	ips := fs.String("ip", "", "comma-separated IP addresses the certificate serves")
	loopback := fs.Bool("loopback", false, "serve localhost, 127.0.0.1 and ::1 too (local runs)")
	lifetime := fs.Duration("lifetime", 24*time.Hour, "how long the certificate is valid; keep it short and issue again (there is no revocation)")
	pos, err := parse(fs, args, positional...)
	if err != nil {
		return err
	}
	dir := pos[0]
	id := framework.Identity{Component: component, Name: pos[1]}
	if component == "" {
		c, n, ok := strings.Cut(strings.TrimPrefix(pos[1], framework.IdentityScheme+"://"), "/")
		if !ok || n == "" {
			return usageError("%q: give the identity as COMPONENT/NAME, e.g. kubelet/node-1", pos[1])
		}
		id = framework.Identity{Component: c, Name: n}
	}
	if err := checkIdentity(id); err != nil {
		return err
	}
	spec := certs.Spec{Component: id.Component, Name: id.Name, Server: *loopback, Lifetime: *lifetime}
	for _, d := range splitList(*dns) {
		spec.DNSNames = append(spec.DNSNames, d)
	}
	for _, a := range splitList(*ips) {
		ip := net.ParseIP(a)
		if ip == nil {
			return usageError("--ip %q is not an IP address", a)
		}
		spec.IPs = append(spec.IPs, ip)
	}
	ca, err := certs.LoadCA(filepath.Join(dir, caFolder, caCertName), filepath.Join(dir, caFolder, caKeyName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no CA in %s: run lockstepctl certs ca %s first", dir, dir)
		}
		return err
	}
	bundle, err := os.ReadFile(filepath.Join(dir, caFolder, bundleName))
	if err != nil {
		return err
	}
	cert, err := ca.Issue(spec)
	if err != nil {
		return err
	}
	chain, key, err := certs.EncodePEM(cert)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, id.Component, id.Name)
	if err := certs.WriteDir(out, map[string][]byte{tlsCert: chain, tlsKey: key, tlsCA: bundle}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s valid until %s: %s\n", id, cert.Leaf.NotAfter.UTC().Format(time.RFC3339), out)
	fmt.Fprintf(stdout, "  --tls-cert %s --tls-key %s --tls-ca %s\n",
		filepath.Join(out, tlsCert), filepath.Join(out, tlsKey), filepath.Join(out, tlsCA))
	return nil
}

// checkIdentity refuses an identity the framework would not read from the
// certificate, before anything is written.
func checkIdentity(id framework.Identity) error {
	if err := handshake.CheckName("component", id.Component); err != nil {
		return usageError("%v", err)
	}
	if err := handshake.CheckName("name", id.Name); err != nil {
		return usageError("%v", err)
	}
	if strings.ContainsAny(id.Component, "/:@") || strings.ContainsAny(id.Name, "/") ||
		id.Component == caFolder || strings.HasPrefix(id.Component, ".") || strings.HasPrefix(id.Name, ".") {
		return usageError("%s is not an identity lockstepctl certs can keep (no '/', ':', '@', no leading '.', component not %q)", id, caFolder)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// identity is one identity folder under DIR.
type identity struct {
	dir  string
	leaf *x509.Certificate
}

// identities lists the identity folders under dir: DIR/<component>/<name>
// holding a tls.crt.
func identities(dir string) ([]identity, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*", "*", tlsCert))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []identity
	for _, m := range matches {
		if strings.HasPrefix(filepath.Base(filepath.Dir(m)), "..") {
			continue
		}
		cs, err := readBundle(m)
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			return nil, fmt.Errorf("%s holds no certificate", m)
		}
		out = append(out, identity{dir: filepath.Dir(m), leaf: cs[0]})
	}
	return out, nil
}

// readBundle reads the certificates of a PEM file; a missing file is an
// empty bundle.
func readBundle(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	orig := b
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 && len(bytes.TrimSpace(orig)) > 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return out, nil
}

// writeFile writes a file beside its final name and renames it into place.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
