package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
			serveOtherTopics(s, contract(t, "1.0.0"))
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

// TestOperatorToolsUnderMutualTLS runs status, check and watch with
// certificates made by lockstepctl certs against a server that requires
// them. With the operator's certificate, status is read; check and watch
// are asked on behalf of the client component (Lockstep-On-Behalf-Of),
// which a server that does not accept that yet answers with an error that
// lockstepctl reports as such, never as a refusal. With the client
// component's own certificate and the contract file, check and watch
// --select work against the server as it is.
func TestOperatorToolsUnderMutualTLS(t *testing.T) {
	pki := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", pki},
		{"certs", "issue", pki, "controller/c-0", "--loopback"},
		{"certs", "issue", pki, "agent/node-1"},
		{"certs", "operator", pki, "alice"},
	} {
		code, _, errOut := ctl(t, args...)
		require.Equal(t, 0, code, errOut)
	}
	server, agent, operator := filepath.Join(pki, "controller", "c-0"), filepath.Join(pki, "agent", "node-1"), filepath.Join(pki, "operator", "alice")
	var audit lineBuffer
	comp, topic, c := nodeinfoServerWith(t, framework.ServerConfig{MTLS: loadCreds(t, server), Logger: slog.New(slog.NewTextHandler(&audit, nil)),
		RequirePeers: []string{"nodeinfo"}})
	require.NoError(t, topic.Set(&assignment{UID: "a", Node: "node-1"}))
	require.NoError(t, topic.Set(&assignment{UID: "b", Node: "node-2"}))
	with := func(dir string, args ...string) (int, string, string) {
		t.Helper()
		return ctl(t, append(args, tlsFlags(dir)...)...)
	}
	v2 := copyContract(t, func(c, s string) (string, string) { return strings.Replace(c, `"1.0.0"`, `"2.0.0"`, 1), s })
	accepted := "accepted: controller 1.0.0 (instance " + comp.Server.Instance() + ") would agree on nodeinfo 1.0.0 with a agent offering " + c.Fingerprint() + "\n"

	// The operator's one certificate: status, check (on behalf of the
	// client component: accepted for the version in use, refused with the
	// reason for another) and watch --select, all without a session.
	code, out, errOut := with(operator, "status", comp.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "controller 1.0.0")
	code, out, errOut = with(operator, "check", comp.URL, "--contract", "nodeinfo", "--version", "1.0.0")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, accepted, out)
	code, out, errOut = with(operator, "check", comp.URL, "--contract-file", v2)
	require.Equal(t, exitRefused, code, errOut)
	assert.True(t, strings.HasPrefix(out, "refused (version_mismatch): controller speaks nodeinfo 1.0.0; agent offers 2.0.0"), out)
	{
		lines := &lineBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		var stderr lineBuffer
		go func() {
			done <- run(ctx, append([]string{"watch", comp.URL, "Assignment", "--select", "node=node-1"}, tlsFlags(operator)...), lines, &stderr)
		}()
		lines.waitFor(t, "synced (held by instance "+comp.Server.Instance()+")")
		assert.Contains(t, lines.String(), `set a {"uid":"a","node":"node-1"}`)
		assert.NotContains(t, lines.String(), `"uid":"b"`)
		require.NoError(t, topic.Set(&assignment{UID: "c", Node: "node-1"}))
		lines.waitFor(t, `set c {"uid":"c","node":"node-1"}`)
		assert.Empty(t, comp.Server.Sessions(), "the operator's entries open no session")
		assert.Error(t, comp.Server.Ready(), "and count for no readiness: no agent is there")
		cancel()
		require.Equal(t, 0, <-done, stderr.String())
	}
	// Each on-behalf entry is audited: a line naming the operator, and a
	// counter by entry, contract and outcome.
	for _, want := range []string{
		`entry=handshake identity=lockstep://operator/alice onBehalfOf=agent contract=nodeinfo version="" outcome=accepted`,
		`entry=handshake identity=lockstep://operator/alice onBehalfOf=agent contract=nodeinfo version="" outcome=version_mismatch`,
		`entry=watch identity=lockstep://operator/alice onBehalfOf=agent contract=nodeinfo version=1.0.0 outcome=accepted`,
	} {
		assert.Contains(t, audit.String(), want)
	}
	metrics := httptest.NewRecorder()
	comp.Server.Metrics().Handler().ServeHTTP(metrics, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`lockstep_on_behalf_total{contract="nodeinfo",entry="handshake",outcome="accepted"} 1`,
		`lockstep_on_behalf_total{contract="nodeinfo",entry="handshake",outcome="version_mismatch"} 1`,
		`lockstep_on_behalf_total{contract="nodeinfo",entry="watch",outcome="accepted"} 1`,
	} {
		assert.Contains(t, metrics.Body.String(), want)
	}

	// The client component's certificate and the contract file.
	code, out, errOut = with(agent, "check", comp.URL, "--contract-file", nodeinfoFile)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, accepted, out)
	code, out, errOut = with(agent, "check", comp.URL, "--contract-file", v2)
	require.Equal(t, exitRefused, code, errOut)
	assert.True(t, strings.HasPrefix(out, "refused (version_mismatch): "), out)
	code, _, errOut = with(agent, "watch", comp.URL, "Assignment")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the status is an operator's; give --contract-file")

	lines := &lineBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr lineBuffer
	go func() {
		done <- run(ctx, append([]string{"watch", comp.URL, "Assignment", "--contract-file", nodeinfoFile, "--select", "node=node-1"}, tlsFlags(agent)...), lines, &stderr)
	}()
	lines.waitFor(t, "synced (held by instance "+comp.Server.Instance()+")")
	assert.Contains(t, lines.String(), `set a {"uid":"a","node":"node-1"}`)
	assert.NotContains(t, lines.String(), `"uid":"b"`)
	cancel()
	require.Equal(t, 0, <-done, stderr.String())
	require.Eventually(t, func() bool { return len(comp.Server.Sessions()) == 0 }, 10*time.Second, 5*time.Millisecond,
		"the watch's session closed")
}

// TestOnBehalfOfWire checks what an operator's check and watch send: the
// header naming the client component, and for the watch no session and no
// handshake; a server that accepts them is used as it answers.
func TestOnBehalfOfWire(t *testing.T) {
	pki := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", pki},
		{"certs", "issue", pki, "controller/c-0", "--loopback"},
		{"certs", "issue", pki, "agent/node-1"},
		{"certs", "operator", pki, "alice"},
	} {
		code, _, errOut := ctl(t, args...)
		require.Equal(t, 0, code, errOut)
	}
	server, agent, operator := filepath.Join(pki, "controller", "c-0"), filepath.Join(pki, "agent", "node-1"), filepath.Join(pki, "operator", "alice")
	var mu sync.Mutex
	var seen []string // method path on-behalf-of session, per request
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" behalf="+r.Header.Get(headerOnBehalfOf)+" session="+r.Header.Get(protocol.HeaderSession))
		mu.Unlock()
		switch {
		case r.URL.Path == protocol.PathHandshake:
			assert.Equal(t, "1", r.URL.Query().Get(protocol.QueryDryRun))
			_, _ = io.WriteString(w, `{"session":"","version":"1.0.0","peer":{"component":"controller","instance":"i","release":"1.0.0"}}`)
		case strings.Contains(r.URL.Path, "/watch/"):
			assert.Equal(t, "node=node-1", r.URL.RawQuery)
			_, _ = io.WriteString(w, `{"type":"set","key":"a","object":{"uid":"a","node":"node-1"}}`+"\n"+`{"type":"closing","reason":"done"}`+"\n")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	pair, err := tls.LoadX509KeyPair(filepath.Join(server, tlsCert), filepath.Join(server, tlsKey))
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}

	code, out, errOut := ctl(t, append([]string{"check", srv.URL, "--contract-file", nodeinfoFile}, tlsFlags(operator)...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "accepted: controller 1.0.0")
	assert.Equal(t, []string{"POST /lockstep/handshake behalf=agent session="}, take())

	code, out, errOut = ctl(t, append([]string{"watch", srv.URL, "Assignment", "--contract-file", nodeinfoFile, "--select", "node=node-1"}, tlsFlags(operator)...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `set a {"uid":"a","node":"node-1"}`)
	assert.Equal(t, []string{"GET /lockstep/nodeinfo/1.0.0/watch/Assignment behalf=agent session="}, take(), "no handshake, no session")

	// The client component's own certificate asks for itself.
	code, _, errOut = ctl(t, append([]string{"check", srv.URL, "--contract-file", nodeinfoFile}, tlsFlags(agent)...)...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"POST /lockstep/handshake behalf= session="}, take())
}
