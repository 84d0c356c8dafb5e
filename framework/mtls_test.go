package framework_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// mtlsServer is a nodecontroller serving the bench contract under mutual
// TLS, recording the peer of every call its handler served.
type mtlsServer struct {
	*frameworktest.Running
	ca      *certs.CA
	dir     string
	mu      sync.Mutex
	callers []framework.Peer
}

func startMTLSServer(t *testing.T, opts ...serverOpt) *mtlsServer {
	t.Helper()
	ca := frameworktest.NewCA(t)
	creds, dir := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	m := &mtlsServer{ca: ca, dir: dir}
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds,
		SessionTTL: 5 * time.Second, Heartbeat: time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	c := benchContract(t, "1.0.0")
	m.Running = frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		framework.HandleUnary(s, c, "ReportStatus", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			p := framework.PeerFromContext(ctx)
			if p == nil {
				return nil, framework.Errorf(framework.CodeInternal, "no peer in the handler's context")
			}
			m.mu.Lock()
			m.callers = append(m.callers, *p)
			m.mu.Unlock()
			return &benchmsg.Ack{Accepted: true}, nil
		})
		framework.HandleBatch(s, c, "ReportStatuses", func(ctx context.Context, n *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		})
		s.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "metrics\n") }))
	})
	return m
}

// peer is a raw HTTPS client of the server presenting cert (or none).
type mtlsPeer struct {
	t  *testing.T
	m  *mtlsServer
	hc *http.Client
}

func (m *mtlsServer) peer(t *testing.T, cert *tls.Certificate) *mtlsPeer {
	t.Helper()
	cfg := &tls.Config{RootCAs: m.ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &mtlsPeer{t: t, m: m, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

func (m *mtlsServer) issue(t *testing.T, ca *certs.CA, spec certs.Spec) *tls.Certificate {
	t.Helper()
	if ca == nil {
		ca = m.ca
	}
	c, err := ca.Issue(spec)
	require.NoError(t, err)
	return &c
}

func (p *mtlsPeer) do(method, path, token string, body []byte) rawAnswer {
	p.t.Helper()
	req, err := http.NewRequest(method, p.m.URL+path, bytes.NewReader(body))
	require.NoError(p.t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(protocol.HeaderSession, token)
	}
	resp, err := p.hc.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	a := rawAnswer{status: resp.StatusCode, header: resp.Header, body: b}
	var w struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &w) == nil {
		a.code, a.message = w.Code, w.Message
	}
	return a
}

// handshake says hello as component/instance and returns the answer and
// the session token, if one was given.
func (p *mtlsPeer) handshake(component, instance string) (rawAnswer, string) {
	p.t.Helper()
	c := benchContract(p.t, "1.0.0")
	hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: component, Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
	require.NoError(p.t, err)
	a := p.do(http.MethodPost, protocol.PathHandshake, "", hello)
	var w handshake.Welcome
	_ = json.Unmarshal(a.body, &w)
	return a, w.Session
}

func (p *mtlsPeer) call(token string) rawAnswer {
	p.t.Helper()
	body, err := json.Marshal(benchmsg.Node(1))
	require.NoError(p.t, err)
	return p.do(http.MethodPost, "/lockstep/bench/1.0.0/ReportStatus", token, body)
}

// TestMTLSIdentityMatrix presents every kind of certificate to a server
// under mutual TLS. Its sessions live ten minutes: the victim's session
// must outlive every case of the matrix, which on a loaded machine takes
// longer than the 5s the other tests' sessions live.
func TestMTLSIdentityMatrix(t *testing.T) {
	m := startMTLSServer(t, func(c *framework.ServerConfig) { c.SessionTTL = 10 * time.Minute })
	other := frameworktest.NewCA(t)
	node1 := m.peer(t, m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-1"}))
	node2 := m.peer(t, m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-2"}))

	// The right identity is accepted, and its handler sees who it is.
	a, token1 := node1.handshake("kubelet", "kubelet-a")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = node1.call(token1)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	m.mu.Lock()
	require.Len(t, m.callers, 1)
	assert.Equal(t, framework.Identity{Component: "kubelet", Name: "node-1"}, m.callers[0].Identity)
	assert.True(t, m.callers[0].Authenticated)
	assert.Equal(t, "kubelet-a", m.callers[0].Instance)
	require.NotNil(t, m.callers[0].Certificate)
	m.mu.Unlock()

	cases := []struct {
		name string
		// cert is what the peer presents; nil for no certificate.
		cert      *tls.Certificate
		component string
		wantCode  framework.Code
	}{
		{"no certificate", nil, "kubelet", framework.CodeUnauthenticated},
		{"unknown CA", m.issue(t, other, certs.Spec{Component: "kubelet", Name: "node-1"}), "kubelet", framework.CodeUnauthenticated},
		{"expired", m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-1",
			NotBefore: time.Now().Add(-2 * time.Hour), Lifetime: time.Hour}), "kubelet", framework.CodeUnauthenticated},
		{"not yet valid", m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-1",
			NotBefore: time.Now().Add(time.Hour)}), "kubelet", framework.CodeUnauthenticated},
		{"another component's certificate", m.issue(t, nil, certs.Spec{Component: "scheduler", Name: "s-0"}), "kubelet", framework.CodePermissionDenied},
		{"right component, wrong role", m.issue(t, nil, certs.Spec{Component: "scheduler", Name: "s-0"}), "scheduler", framework.CodePermissionDenied},
		{"the server's own component", m.issue(t, nil, certs.Spec{Component: "nodecontroller", Name: "nc-1"}), "nodecontroller", framework.CodePermissionDenied},
		{"operator identity handshaking", m.issue(t, nil, certs.Spec{Component: "operator", Name: "alice"}), "kubelet", framework.CodePermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := m.peer(t, tc.cert)
			a, _ := p.handshake(tc.component, "intruder")
			assert.Equal(t, string(tc.wantCode), a.code, "%s", a.body)
			assert.Equal(t, tc.wantCode.HTTPStatus(), a.status)
			// The same peer's calls with a valid token are refused alike.
			a = p.call(token1)
			assert.Contains(t, []string{string(framework.CodeUnauthenticated), string(framework.CodePermissionDenied)}, a.code, "%s", a.body)
		})
	}

	// A token replayed from another identity's connection is refused, on
	// every entry that names sessions.
	a = node2.call(token1)
	assert.Equal(t, string(framework.CodePermissionDenied), a.code, "%s", a.body)
	hb, _ := json.Marshal(map[string][]string{"sessions": {token1}})
	a = node2.do(http.MethodPost, protocol.PathHeartbeat, "", hb)
	assert.Equal(t, string(framework.CodePermissionDenied), a.code, "heartbeat: %s", a.body)
	a = node2.do(http.MethodDelete, protocol.PathSession, token1, nil)
	assert.Equal(t, string(framework.CodePermissionDenied), a.code, "session close: %s", a.body)

	// Taking over node-1's instance from another identity is refused, and
	// the victim keeps its session.
	a, _ = node2.handshake("kubelet", "kubelet-a")
	assert.Equal(t, string(framework.CodePermissionDenied), a.code, "%s", a.body)
	a = node1.call(token1)
	assert.Equal(t, http.StatusOK, a.status, "the victim keeps its session: %s", a.body)
	// The same identity may re-handshake its instance (a restart).
	a, token1b := node1.handshake("kubelet", "kubelet-a")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = node1.call(token1b)
	assert.Equal(t, http.StatusOK, a.status, "%s", a.body)
	// and close its own session.
	a = node1.do(http.MethodDelete, protocol.PathSession, token1b, nil)
	assert.Equal(t, http.StatusNoContent, a.status, "%s", a.body)
}

func TestMTLSStatusOnlyForOperators(t *testing.T) {
	m := startMTLSServer(t)
	kubelet := m.peer(t, m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-1"}))
	operator := m.peer(t, m.issue(t, nil, certs.Spec{Component: "operator", Name: "alice"}))
	anonymous := m.peer(t, nil)
	for _, path := range []string{protocol.PathStatus, "/metrics"} {
		assert.Equal(t, http.StatusOK, operator.do(http.MethodGet, path, "", nil).status, path)
		assert.Equal(t, string(framework.CodePermissionDenied), kubelet.do(http.MethodGet, path, "", nil).code, path)
		assert.Equal(t, string(framework.CodeUnauthenticated), anonymous.do(http.MethodGet, path, "", nil).code, path)
	}
	// Probes present no certificate: health stays open.
	for _, path := range []string{"/healthz", "/livez"} {
		assert.Equal(t, http.StatusOK, anonymous.do(http.MethodGet, path, "", nil).status, path)
	}
}

func TestMTLSRotationWithoutRestart(t *testing.T) {
	m := startMTLSServer(t)
	serverSerial := func() *x509.Certificate {
		conn, err := tls.Dial("tcp", m.Addr, &tls.Config{RootCAs: m.ca.Pool(), ServerName: "localhost"})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	before := serverSerial()
	frameworktest.RotateCredentials(t, m.ca, m.dir, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	require.Eventually(t, func() bool { return serverSerial().SerialNumber.Cmp(before.SerialNumber) != 0 },
		10*time.Second, 20*time.Millisecond, "the server serves its rotated certificate")

	// A client's credentials rotate too: the framework client dials new
	// connections with the rotated certificate.
	creds, dir := frameworktest.NewCredentials(t, m.ca, certs.Spec{Component: "kubelet", Name: "node-1"})
	tr := creds.Transport("")
	t.Cleanup(tr.CloseIdleConnections)
	cl := benchClient(t, "1.0.0", []string{m.URL}, func(c *framework.ClientConfig) { c.Transport = tr })
	_, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	frameworktest.RotateCredentials(t, m.ca, dir, certs.Spec{Component: "kubelet", Name: "node-1"})
	require.NoError(t, creds.Reload()) // what the reload interval does on its own
	tr.CloseIdleConnections()
	_, err = report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	m.mu.Lock()
	defer m.mu.Unlock()
	require.GreaterOrEqual(t, len(m.callers), 2)
	first, last := m.callers[0].Certificate, m.callers[len(m.callers)-1].Certificate
	assert.NotEqual(t, 0, first.SerialNumber.Cmp(last.SerialNumber), "the second call came with the rotated certificate")
	assert.Equal(t, m.callers[0].Identity, m.callers[len(m.callers)-1].Identity)
}
