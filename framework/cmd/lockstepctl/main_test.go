package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/handshake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// component is a live nodecontroller serving the topics contract at 1.0.0,
// writing its NodeHealth topic, with one kubelet holding a session.
type component struct {
	*frameworktest.Running
	health  *framework.TopicWriter[topicmsg.NodeHealth]
	kubelet *framework.Client
}

func contract(t *testing.T, version string) *framework.Contract {
	t.Helper()
	c, err := framework.NewContract(topicmsg.Contract(version))
	require.NoError(t, err)
	return c
}

// serveOtherTopics serves, as raw JSON, the topics of c other than
// NodeHealth, which the tests do not use: a server starts only when it
// serves every topic its contracts declare.
func serveOtherTopics(s *framework.Server, c *framework.Contract) {
	for _, name := range c.Topics() {
		decl, _ := c.Topic(name)
		switch {
		case name == topicmsg.TopicNodeHealth:
		case decl.Writer == handshake.RoleClient:
			framework.ServeClientTopic[json.RawMessage](s, c, name)
		default:
			framework.ServeTopic[json.RawMessage](s, c, name)
		}
	}
}

func start(t *testing.T, cfg framework.ServerConfig, clientTLS *framework.ClientConfig) *component {
	t.Helper()
	cfg.Component, cfg.Release = "nodecontroller", "1.31.0"
	c := contract(t, "1.0.0")
	comp := &component{}
	comp.Running = frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		comp.health = framework.ServeTopic[topicmsg.NodeHealth](s, c, topicmsg.TopicNodeHealth)
		serveOtherTopics(s, c)
	})
	ccfg := framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Instance: "kubelet-node-1", Endpoints: []string{comp.URL}}
	if clientTLS != nil {
		ccfg.TLSConfig = clientTLS.TLSConfig
	}
	comp.kubelet = frameworktest.NewClient(t, c, ccfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, comp.kubelet.WaitReady(ctx))
	return comp
}

// ctl runs lockstepctl with args and returns its exit status and output.
func ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestStatusNamesEachSessionsIdentity: the peer table shows who holds
// each session, as its verified certificate names it, next to the
// instance name the peer chose for itself.
func TestStatusNamesEachSessionsIdentity(t *testing.T) {
	var out strings.Builder
	require.NoError(t, printStatus(&out, framework.ServerStatus{Sessions: []framework.SessionInfo{
		{Contract: "topics", Version: "1.0.0", Peer: handshake.Peer{Component: "kubelet", Instance: "aaa-looks-harmless", Release: "1.31.0"},
			Identity: "lockstep://kubelet/node-9", State: framework.SessionLive},
	}}))
	assert.Regexp(t, `(?m)^PEER\s+INSTANCE\s+IDENTITY\s+RELEASE`, out.String())
	assert.Regexp(t, `(?m)^kubelet\s+aaa-looks-harmless\s+lockstep://kubelet/node-9\s+1\.31\.0\s+topics\s`, out.String())
}

func TestStatus(t *testing.T) {
	comp := start(t, framework.ServerConfig{}, nil)
	require.NoError(t, comp.health.Set(&topicmsg.NodeHealth{Node: "node-1", Ready: true}))

	code, out, errOut := ctl(t, "status", comp.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "nodecontroller 1.31.0 (instance "+comp.Server.Instance()+"): ready")
	assert.Regexp(t, `(?m)^topics\s+1\.0\.0\s+lsfp1:[0-9a-f]{64}\s+kubelet\s+1$`, out, "contract, version, fingerprint, client, sessions")
	assert.Regexp(t, `(?m)^kubelet\s+kubelet-node-1\s+-\s+1\.31\.0\s+topics\s+1\.0\.0\s+live\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+s\)\s+\d`, out,
		"the peer: no identity without mutual TLS, agreed version, state, since")
	assert.Regexp(t, `(?m)^NodeHealth\s+topics\s+1\.0\.0\s+1\s+1\s+0$`, out, "the topic: keys, writers, watchers")

	code, out, errOut = ctl(t, "status", "-o", "json", comp.URL)
	require.Equal(t, 0, code, errOut)
	var st framework.ServerStatus
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Sessions, 1)
	assert.Equal(t, "kubelet-node-1", st.Sessions[0].Peer.Instance)

	code, out, errOut = ctl(t, "status", comp.URL, "-o", "yaml")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "component: nodecontroller\n")
	assert.Contains(t, out, "instance: kubelet-node-1\n")

	code, _, errOut = ctl(t, "status", "-o", "xml", comp.URL)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `-o "xml"`)
}

func TestCheck(t *testing.T) {
	// The drain waits for the kubelet's session however slow the machine
	// (DrainTimeout a minute): the draining check below must find it open.
	comp := start(t, framework.ServerConfig{DrainTimeout: time.Minute}, nil)
	v1 := contract(t, "1.0.0").Fingerprint()
	v2 := contract(t, "2.0.0").Fingerprint()

	// The server's own fingerprint of 1.0.0: accepted.
	code, out, errOut := ctl(t, "check", comp.URL, "--contract", "topics", "--version", "1.0.0")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "accepted: nodecontroller 1.31.0 (instance "+comp.Server.Instance()+") would agree on topics 1.0.0 with a kubelet offering "+v1+"\n", out)

	// A wire model file: its fingerprint is offered.
	model := topicmsg.Contract("1.0.0")
	b, err := json.Marshal(model)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "topics-1.0.0.json")
	require.NoError(t, os.WriteFile(file, b, 0o600))
	code, out, errOut = ctl(t, "check", comp.URL, "--contract", "topics", "--version", "1.0.0", "--contract-file", file)
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, out, "accepted: ")

	// Version mismatch: the server's own sentence.
	code, out, errOut = ctl(t, "check", comp.URL, "--contract", "topics", "--version", "2.0.0", "--fingerprint", v2)
	require.Equal(t, exitRefused, code, errOut)
	assert.Equal(t, "refused (version_mismatch): nodecontroller speaks topics 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode\n", out)

	// The same version with other messages.
	other := strings.Repeat("0", 64)
	code, out, errOut = ctl(t, "check", comp.URL, "--contract", "topics", "--version", "1.0.0", "--fingerprint", handshake.FingerprintPrefix+other)
	require.Equal(t, exitRefused, code, errOut)
	assert.True(t, strings.HasPrefix(out, "refused (fingerprint_mismatch): "), out)
	assert.Contains(t, out, v1)

	// None of this opened a session: only the kubelet's is there.
	require.Len(t, comp.Server.Sessions(), 1)
	assert.Equal(t, "kubelet-node-1", comp.Server.Sessions()[0].Peer.Instance)

	// Draining: the kubelet's session keeps the drain's first phase open.
	drained := make(chan error, 1)
	go func() { drained <- comp.Stop() }()
	require.Eventually(t, comp.Server.Draining, 10*time.Second, 5*time.Millisecond)
	code, out, errOut = ctl(t, "check", comp.URL, "--contract", "topics", "--version", "1.0.0")
	require.Equal(t, exitRefused, code, errOut)
	assert.True(t, strings.HasPrefix(out, "refused (draining): "), out)
	require.NoError(t, comp.kubelet.Close())
	require.NoError(t, <-drained)

	// Bad use is a usage error, not a refusal.
	code, _, errOut = ctl(t, "check", "127.0.0.1:1", "--contract", "topics", "--version", "1.0.0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "must start with http://")
	code, _, errOut = ctl(t, "check", "http://127.0.0.1:1", "--version", "1.0.0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--contract and --version")
}

func TestWatch(t *testing.T) {
	comp := start(t, framework.ServerConfig{}, nil)
	require.NoError(t, comp.health.Set(&topicmsg.NodeHealth{Node: "node-1", Ready: true}))

	lines := &lineBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"watch", comp.URL, "NodeHealth"}, lines, &stderr) }()
	lines.waitFor(t, "synced (held by instance "+comp.Server.Instance()+")")
	assert.Contains(t, lines.String(), `set node-1 {"node":"node-1","ready":true}`, "the snapshot comes first")

	require.NoError(t, comp.health.Set(&topicmsg.NodeHealth{Node: "node-2", Reason: "booting"}))
	lines.waitFor(t, `set node-2 {"node":"node-2","ready":false,"reason":"booting"}`)
	require.NoError(t, comp.health.Delete("node-1"))
	lines.waitFor(t, "delete node-1")
	require.Len(t, comp.Server.Sessions(), 2, "the watch holds a session of its own")

	cancel()
	require.Equal(t, 0, <-done, stderr.String())
	require.Eventually(t, func() bool { return len(comp.Server.Sessions()) == 1 }, 10*time.Second, 5*time.Millisecond,
		"lockstepctl closed its session when it stopped")

	code, _, errOut := ctl(t, "watch", comp.URL, "NoSuchTopic")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "holds no topic NoSuchTopic")
}

// TestTLS reads the status of a server that verifies client certificates,
// presenting one as the operator's identity.
func TestTLS(t *testing.T) {
	material := frameworktest.NewTLS(t, "operator")
	comp := start(t, framework.ServerConfig{TLSConfig: material.Server}, &framework.ClientConfig{TLSConfig: material.Client})
	dir := t.TempDir()
	// The server's certificate stands in for the CA: a root pool that holds
	// the leaf itself verifies it.
	srvCert := material.Server.Certificates[0].Leaf
	cli := material.Client.Certificates[0]
	keyDER, err := x509.MarshalECPrivateKey(cli.PrivateKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	ca := write("ca.pem", "CERTIFICATE", srvCert.Raw)
	cert := write("operator.pem", "CERTIFICATE", cli.Leaf.Raw)
	key := write("operator-key.pem", "EC PRIVATE KEY", keyDER)

	code, out, errOut := ctl(t, "status", comp.URL, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "kubelet-node-1")

	code, _, errOut = ctl(t, "status", comp.URL)
	assert.Equal(t, 2, code, "without the CA the server is not trusted")
	assert.Contains(t, errOut, "certificate")

	code, _, errOut = ctl(t, "status", comp.URL, "--tls-cert", cert)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--tls-cert and --tls-key go together")
}

// lineBuffer is a concurrency-safe output a test waits on.
type lineBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lineBuffer) waitFor(t *testing.T, line string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return strings.Contains("\n"+l.String(), "\n"+line+"\n")
	}, 10*time.Second, 5*time.Millisecond, "no line %q in:\n%s", line, l)
}
