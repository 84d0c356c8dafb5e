package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// tlsFlags are lockstepctl's TLS flags for the identity folder dir.
func tlsFlags(dir string) []string {
	return []string{"--tls-cert", filepath.Join(dir, tlsCert), "--tls-key", filepath.Join(dir, tlsKey), "--tls-ca", filepath.Join(dir, tlsCA)}
}

func loadCreds(t *testing.T, dir string) *framework.Credentials {
	t.Helper()
	creds, err := framework.LoadCredentials(framework.MTLSFiles{
		CertFile: filepath.Join(dir, tlsCert), KeyFile: filepath.Join(dir, tlsKey), CAFile: filepath.Join(dir, tlsCA)})
	require.NoError(t, err)
	return creds
}

// kubeletReady connects a kubelet client with the identity in dir and
// waits until it holds a session: a real TLS handshake in both directions
// and the server's reading of the certificate's identity.
func kubeletReady(t *testing.T, url, dir, instance string) error {
	t.Helper()
	creds := loadCreds(t, dir)
	cl, err := framework.NewClient(contract(t, "1.0.0"), framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Instance: instance, Endpoints: []string{url}, Transport: creds.Transport(""), Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.WaitReady(ctx)
}

// TestCertsMutualTLS makes a CA and certificates with lockstepctl certs,
// serves mutual TLS from them on 127.0.0.1, and rotates the CA without
// restarting anything.
func TestCertsMutualTLS(t *testing.T) {
	pki := filepath.Join(t.TempDir(), "deep", "pki") // created by the command
	mustCtl := func(args ...string) string {
		t.Helper()
		code, out, errOut := ctl(t, args...)
		require.Equal(t, 0, code, "lockstepctl %v: %s", args, errOut)
		return out
	}
	mustCtl("certs", "ca", pki)
	code, _, errOut := ctl(t, "certs", "ca", pki)
	assert.Equal(t, 2, code, "a second CA over the first is refused")
	assert.Contains(t, errOut, "--rotate")
	out := mustCtl("certs", "issue", pki, "nodecontroller/nc-0", "--loopback", "--dns", "nodecontroller.lockstep.svc")
	assert.Contains(t, out, "lockstep://nodecontroller/nc-0 valid until ")
	mustCtl("certs", "issue", pki, "kubelet/node-1")
	mustCtl("certs", "operator", pki, "alice")
	server, kubelet, operator := filepath.Join(pki, "nodecontroller", "nc-0"), filepath.Join(pki, "kubelet", "node-1"), filepath.Join(pki, "operator", "alice")

	// The identities, as the framework reads them from the files.
	for dir, want := range map[string]framework.Identity{
		server: {Component: "nodecontroller", Name: "nc-0"}, kubelet: {Component: "kubelet", Name: "node-1"},
		operator: {Component: "operator", Name: "alice"},
	} {
		cs, err := readBundle(filepath.Join(dir, tlsCert))
		require.NoError(t, err)
		require.Len(t, cs, 1)
		id, err := framework.IdentityFromCertificate(cs[0])
		require.NoError(t, err)
		assert.Equal(t, want, id)
		fi, err := os.Stat(filepath.Join(dir, tlsKey))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "keys are private")
	}
	fi, err := os.Stat(filepath.Join(pki, caFolder, caKeyName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	serverCreds := loadCreds(t, server)
	comp := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: serverCreds},
		func(s *framework.Server) {
			framework.ServeTopic[topicmsg.NodeHealth](s, contract(t, "1.0.0"), topicmsg.TopicNodeHealth)
		})
	require.NoError(t, kubeletReady(t, comp.URL, kubelet, "node-1-a"))

	out = mustCtl(append([]string{"status", comp.URL}, tlsFlags(operator)...)...)
	assert.Contains(t, out, "nodecontroller 1.31.0")
	code, _, errOut = ctl(t, append([]string{"status", comp.URL}, tlsFlags(kubelet)...)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "permission_denied", "the status is an operator's")

	// Rotation: a new CA; the old one stays trusted through the bundle,
	// which every identity folder gets.
	oldOperator := filepath.Join(t.TempDir(), "old-operator")
	require.NoError(t, os.MkdirAll(oldOperator, 0o700))
	for _, f := range []string{tlsCert, tlsKey, tlsCA} {
		b, err := os.ReadFile(filepath.Join(operator, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(oldOperator, f), b, 0o600))
	}
	out = mustCtl("certs", "ca", pki, "--rotate")
	assert.Contains(t, out, "bundle of 2 CA certificate(s)")
	bundle, err := readBundle(filepath.Join(kubelet, tlsCA))
	require.NoError(t, err)
	assert.Len(t, bundle, 2, "identity folders trust both CAs")
	code, _, errOut = ctl(t, "certs", "ca", pki, "--drop-old")
	assert.Equal(t, 2, code, "the old CA is still in use")
	assert.Contains(t, errOut, "is not issued by the current CA")

	mustCtl("certs", "issue", pki, "kubelet/node-2")
	require.NoError(t, serverCreds.Reload())
	require.NoError(t, kubeletReady(t, comp.URL, filepath.Join(pki, "kubelet", "node-2"), "node-2-a"), "a certificate of the new CA")
	require.NoError(t, kubeletReady(t, comp.URL, kubelet, "node-1-b"), "a certificate of the old CA, still trusted")

	// Every identity issued again: the old CA can go.
	mustCtl("certs", "issue", pki, "nodecontroller/nc-0", "--loopback")
	mustCtl("certs", "issue", pki, "kubelet/node-1")
	mustCtl("certs", "operator", pki, "alice")
	out = mustCtl("certs", "ca", pki, "--drop-old")
	assert.Contains(t, out, "bundle of 1 CA certificate(s)")
	require.NoError(t, serverCreds.Reload())
	require.NoError(t, kubeletReady(t, comp.URL, kubelet, "node-1-c"))
	mustCtl(append([]string{"status", comp.URL}, tlsFlags(operator)...)...)
	code, _, errOut = ctl(t, "status", comp.URL, "--tls-cert", filepath.Join(oldOperator, tlsCert),
		"--tls-key", filepath.Join(oldOperator, tlsKey), "--tls-ca", filepath.Join(operator, tlsCA))
	assert.Equal(t, 2, code, "a certificate of the dropped CA is refused")
	assert.Contains(t, errOut, "unauthenticated")

	// Mistakes are refused before anything is written.
	for _, args := range [][]string{
		{"certs", "issue", pki, "kubelet"},
		{"certs", "issue", pki, "ca/x"},
		{"certs", "issue", pki, "kubelet/../x"},
		{"certs", "issue", pki, "kubelet/node-3", "--ip", "not-an-ip"},
		{"certs", "ca", pki, "--rotate", "--drop-old"},
	} {
		code, _, errOut := ctl(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
	_, err = os.Stat(filepath.Join(pki, "kubelet", "node-3"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	code, _, errOut = ctl(t, "certs", "issue", filepath.Join(t.TempDir(), "empty"), "kubelet/node-1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no CA in")
}

// TestCheckUnderMutualTLS runs check and watch with certificates made by
// lockstepctl certs against a server requiring them: with the operator's
// certificate, the dry run is asked on behalf of the client component
// (Lockstep-On-Behalf-Of), and a server that does not accept that yet is
// reported as such, not as a refusal; with the client component's own
// certificate, check works today.
func TestCheckUnderMutualTLS(t *testing.T) {
	pki := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", pki},
		{"certs", "issue", pki, "nodecontroller/nc-0", "--loopback"},
		{"certs", "issue", pki, "kubelet/node-1"},
		{"certs", "operator", pki, "alice"},
	} {
		code, _, errOut := ctl(t, args...)
		require.Equal(t, 0, code, errOut)
	}
	server, kubelet, operator := filepath.Join(pki, "nodecontroller", "nc-0"), filepath.Join(pki, "kubelet", "node-1"), filepath.Join(pki, "operator", "alice")
	comp := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: loadCreds(t, server)},
		func(s *framework.Server) {
			framework.ServeTopic[topicmsg.NodeHealth](s, contract(t, "1.0.0"), topicmsg.TopicNodeHealth)
		})
	fp := contract(t, "1.0.0").Fingerprint()

	code, out, errOut := ctl(t, append([]string{"check", comp.URL, "--contract", "topics", "--version", "1.0.0"}, tlsFlags(operator)...)...)
	assert.Equal(t, 2, code, "not a refusal: the answer is unknown: %s", out)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "permission_denied")
	assert.Contains(t, errOut, "does not accept a dry run on behalf of kubelet from lockstep://operator/alice")

	code, out, errOut = ctl(t, append([]string{"check", comp.URL, "--contract", "topics", "--version", "1.0.0",
		"--fingerprint", fp, "--component", "kubelet"}, tlsFlags(kubelet)...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "accepted: nodecontroller 1.31.0")
	code, out, errOut = ctl(t, append([]string{"check", comp.URL, "--contract", "topics", "--version", "2.0.0",
		"--fingerprint", fp, "--component", "kubelet"}, tlsFlags(kubelet)...)...)
	require.Equal(t, exitRefused, code, errOut)
	assert.True(t, strings.HasPrefix(out, "refused (version_mismatch): "), out)

	code, _, errOut = ctl(t, append([]string{"watch", comp.URL, "NodeHealth"}, tlsFlags(operator)...)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the server does not admit lockstep://operator/alice as one; watch with a kubelet certificate")
	assert.Empty(t, comp.Server.Sessions(), "nothing opened a session")

	// The wire: the operator's dry run names the role it asks for.
	var got http.Header
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == protocol.PathHandshake {
			got = r.Header.Clone()
			assert.Equal(t, "1", r.URL.Query().Get(protocol.QueryDryRun))
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"code":"permission_denied","message":"no"}`)
		}
	}))
	pair, err := tls.LoadX509KeyPair(filepath.Join(server, tlsCert), filepath.Join(server, tlsKey))
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	code, _, errOut = ctl(t, append([]string{"check", srv.URL, "--contract", "topics", "--version", "1.0.0",
		"--fingerprint", fp, "--component", "kubelet"}, tlsFlags(operator)...)...)
	assert.Equal(t, 2, code, errOut)
	require.NotNil(t, got)
	assert.Equal(t, "kubelet", got.Get(headerOnBehalfOf))
	got = nil
	code, _, _ = ctl(t, append([]string{"check", srv.URL, "--contract", "topics", "--version", "1.0.0",
		"--fingerprint", fp, "--component", "kubelet"}, tlsFlags(kubelet)...)...)
	assert.Equal(t, exitRefused, code, "the client's own certificate asks for itself")
	assert.Empty(t, got.Get(headerOnBehalfOf))
}
