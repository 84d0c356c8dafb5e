package certs_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework/certs"
)

func TestWriteFilesCreatesItsFolder(t *testing.T) {
	ca, err := certs.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.MustIssue(certs.Spec{Component: "kubelet", Name: "node-1"})
	dir := filepath.Join(t.TempDir(), "a", "b")
	certFile, keyFile, caFile, err := ca.WriteFiles(dir, "kubelet", cert)
	if err != nil {
		t.Fatalf("WriteFiles into a missing folder: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatalf("the pair written does not load: %v", err)
	}
	if b, err := os.ReadFile(caFile); err != nil || string(b) != string(ca.PEM()) {
		t.Fatalf("ca.crt: %v", err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder: %v %v", fi.Mode(), err)
	}
}

func TestLoadCAIssuesAsTheCAItWrote(t *testing.T) {
	ca, err := certs.NewCAValid("kept CA", time.Now().Add(-time.Minute), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	if err := ca.WriteCAFiles(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	loaded, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Cert.Equal(ca.Cert) {
		t.Fatal("LoadCA read another certificate")
	}
	leaf := loaded.MustIssue(certs.Spec{Component: "operator", Name: "alice"}).Leaf
	if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("a certificate issued by the loaded CA does not verify against the original: %v", err)
	}
	other, err := certs.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCAFiles(filepath.Join(dir, "other.crt"), filepath.Join(dir, "other.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.key")); err == nil {
		t.Fatal("a CA certificate with another CA's key loaded")
	}
	if _, err := certs.NewCAValid("x", time.Now(), 0); err == nil {
		t.Fatal("a CA without a lifetime was made")
	}
}

func TestWriteDirSwapsTheWholeSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "id")
	// A regular file from an earlier layout is replaced by its link.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("plain"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, gen := range []string{"1", "2", "3"} {
		if err := certs.WriteDir(dir, map[string][]byte{"tls.crt": []byte("cert" + gen), "tls.key": []byte("key" + gen)}); err != nil {
			t.Fatal(err)
		}
		if read("tls.crt") != "cert"+gen || read("tls.key") != "key"+gen {
			t.Fatalf("generation %s: %q %q", gen, read("tls.crt"), read("tls.key"))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// tls.crt, tls.key, ..data and one set: earlier sets are gone.
	if len(names) != 4 {
		t.Fatalf("the folder holds %v", names)
	}
	if err := certs.WriteDir(dir, map[string][]byte{"../x": nil}); err == nil {
		t.Fatal("a name outside the folder was accepted")
	}
}
