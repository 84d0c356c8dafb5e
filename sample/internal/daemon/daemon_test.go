package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func TestParsePeer(t *testing.T) {
	for _, tc := range []struct {
		spec    string   // the flag's value
		urls    []string // static endpoints
		host    string   // DNS A/AAAA name
		port    int
		service string // DNS SRV name
		scheme  string // the DNS endpoints' scheme
		err     string // part of the error, if any
	}{
		{spec: "http://127.0.0.1:8441", urls: []string{"http://127.0.0.1:8441"}},
		{spec: "https://10.0.0.7:8443/, https://10.0.0.8:8443", urls: []string{"https://10.0.0.7:8443", "https://10.0.0.8:8443"}},
		{spec: "dns+https://nodecontroller.lockstep.svc.cluster.local.:8443", host: "nodecontroller.lockstep.svc.cluster.local.", port: 8443, scheme: "https"},
		{spec: "srv+http://_http._tcp.nodecontroller.sample.test.", service: "_http._tcp.nodecontroller.sample.test.", scheme: "http"},
		{spec: "", err: "no peer"},
		{spec: "nodecontroller:8441", err: "is not an http(s) URL"},
		{spec: "dns+ftp://a:1", err: "want dns+http or dns+https"},
		{spec: "dns+https://a", err: "want dns+https://NAME:PORT"},
		{spec: "dns+https://a:http", err: "is not a port"},
		{spec: "dns+https://a:1,b:2", err: "a DNS peer is one name"},
	} {
		p, err := ParsePeer(tc.spec)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.spec)
			continue
		}
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.urls, p.URLs, tc.spec)
		if tc.host != "" || tc.service != "" {
			require.NotNil(t, p.DNS, tc.spec)
			assert.Equal(t, tc.host, p.DNS.Host)
			assert.Equal(t, tc.port, p.DNS.Port)
			assert.Equal(t, tc.service, p.DNS.Service)
			assert.Equal(t, tc.scheme, p.DNS.Scheme)
		}
	}
}

func TestFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string // the command line
		err  string   // part of the error, if any
	}{
		{args: nil},
		{args: []string{"--api", "v1"}},
		{args: []string{"--api", "v3"}, err: `--api "v3"`},
		{args: []string{"--api", "v1", "--fork"}, err: "--fork needs --api v2"},
		{args: []string{"--tls-cert", "a.pem"}, err: "go together"},
		{args: []string{"--tls-ca", "ca.pem"}, err: "--tls-ca needs"},
		{args: []string{"--log-level", "loud"}, err: "--log-level"},
		{args: []string{"--log-format", "xml"}, err: "--log-format"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := NewFlags(fs, "kubelet", "127.0.0.1:0", true)
		require.NoError(t, fs.Parse(tc.args))
		err := f.Validate()
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%v", tc.args)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, Releases[f.API], f.Release)
	}
}

var pingContract = framework.MustContract(handshake.Contract{
	Name: "ping", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
	Methods: map[string]handshake.Method{"Ping": {Request: "Msg", Response: "Msg"}},
	Schemas: map[string]json.RawMessage{"Msg": json.RawMessage(`{"type":"object"}`)},
})

type msg struct{}

// startDaemon runs a lockstep server through Run until the test ends.
func startDaemon(t *testing.T, args ...string) (addr string, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr = l.Addr().String()
	l.Close()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewFlags(fs, "nodecontroller", addr, false)
	require.NoError(t, fs.Parse(args))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, f, io.Discard, func(rt *Runtime) (*Service, error) {
			srv, err := framework.NewServer(rt.ServerConfig(framework.ServerConfig{}))
			if err != nil {
				return nil, err
			}
			framework.HandleUnary(srv, pingContract, "Ping", func(context.Context, *msg) (*msg, error) { return &msg{}, nil })
			return &Service{Lockstep: srv, Status: func() any { return map[string]string{"hello": "status"} }}, nil
		})
	}()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return addr, stop
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	require.Eventually(t, func() bool { resp, err = client.Get(url); return err == nil }, 5*time.Second, 10*time.Millisecond, "GET %s", url)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRunServesHealthMetricsAndStatusThenStops(t *testing.T) {
	addr, stop := startDaemon(t)
	base := "http://" + addr
	code, _ := get(t, http.DefaultClient, base+"/healthz")
	assert.Equal(t, 200, code)
	code, body := get(t, http.DefaultClient, base+"/readyz")
	assert.Equal(t, 200, code, "no peers required: %s", body)
	code, body = get(t, http.DefaultClient, base+"/metrics")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "go_goroutines")
	code, body = get(t, http.DefaultClient, base+"/status")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"hello":"status"}`, body)

	c, err := framework.NewClient(pingContract, framework.ClientConfig{Component: "kubelet", Release: "1.0.0", Endpoints: []string{base}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = framework.CallUnary[msg, msg](ctx, c, "Ping", &msg{})
	require.NoError(t, err)
	_, body = get(t, http.DefaultClient, base+"/metrics")
	assert.Contains(t, body, `lockstep_sessions{contract="ping",version="1.0.0"} 1`)

	require.NoError(t, stop(), "a graceful stop")
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

// A component that serves no contract (a client only) is served the same
// way: health endpoints with its own readiness, /metrics and /status, and
// a stop that ends its work before its clients close.
func TestRunServesAClientOnlyComponentThenStops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewFlags(fs, "kubelet", addr, false)
	require.NoError(t, fs.Parse(nil))
	var ready atomic.Bool
	ranUntilStop, closedAfterRun := make(chan struct{}), make(chan bool, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, f, io.Discard, func(*Runtime) (*Service, error) {
			return &Service{
				Ready: func() error {
					if !ready.Load() {
						return errors.New("no session yet")
					}
					return nil
				},
				Status: func() any { return map[string]string{"nodes": "3"} },
				Run:    func(ctx context.Context) { <-ctx.Done(); close(ranUntilStop) },
				Close: func() {
					select {
					case <-ranUntilStop:
						closedAfterRun <- true
					default:
						closedAfterRun <- false
					}
				},
			}, nil
		})
	}()
	base := "http://" + addr
	code, _ := get(t, http.DefaultClient, base+"/healthz")
	assert.Equal(t, 200, code)
	code, body := get(t, http.DefaultClient, base+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "kubelet: no session yet")
	ready.Store(true)
	code, _ = get(t, http.DefaultClient, base+"/readyz")
	assert.Equal(t, 200, code)
	code, body = get(t, http.DefaultClient, base+"/metrics")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "go_goroutines", "the binary's registry, not the framework's default")
	_, body = get(t, http.DefaultClient, base+"/status")
	assert.JSONEq(t, `{"nodes":"3"}`, body)

	cancel()
	require.NoError(t, <-done)
	assert.True(t, <-closedAfterRun, "clients close once the component's work has stopped")
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

func TestRunRefusesPlainHTTPOffLoopback(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewFlags(fs, "kubelet", "0.0.0.0:0", false)
	require.NoError(t, fs.Parse(nil))
	err := Run(context.Background(), f, io.Discard, func(*Runtime) (*Service, error) { return &Service{}, nil })
	assert.ErrorContains(t, err, "refusing plain HTTP")
}

// writeCerts writes a CA (ca.crt), a server certificate for 127.0.0.1
// (nodecontroller.crt, .key) and client certificates naming components
// (<name>.crt, .key), as PEM files.
func writeCerts(t *testing.T, dir string, clients ...string) {
	t.Helper()
	ca, err := certs.NewCA("sample CA")
	require.NoError(t, err)
	for _, name := range append([]string{"nodecontroller"}, clients...) {
		cert, err := ca.Issue(certs.Spec{Component: name, Name: name + "-0", Server: name == "nodecontroller"})
		require.NoError(t, err)
		_, _, _, err = ca.WriteFiles(dir, name, cert)
		require.NoError(t, err)
	}
}

func TestTLSFlagsBindClientCertificatesToComponents(t *testing.T) {
	dir := t.TempDir()
	writeCerts(t, dir, "kubelet", "scheduler")
	p := func(name string) string { return filepath.Join(dir, name) }
	addr, _ := startDaemon(t, "--tls-cert", p("nodecontroller.crt"), "--tls-key", p("nodecontroller.key"), "--tls-ca", p("ca.crt"))
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(p("ca.crt"))
	pool.AppendCertsFromPEM(caPEM)
	clientWith := func(name string) *http.Client {
		cfg := &tls.Config{RootCAs: pool}
		if name != "" {
			cert, err := tls.LoadX509KeyPair(p(name+".crt"), p(name+".key"))
			require.NoError(t, err)
			cfg.Certificates = []tls.Certificate{cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 2 * time.Second}
	}
	base := "https://" + addr
	code, _ := get(t, clientWith(""), base+"/readyz")
	assert.Equal(t, 200, code, "probes need no certificate")

	hello := func(c *http.Client) (int, string) {
		b, _ := json.Marshal(handshake.Hello{Contract: "ping", Component: "kubelet", Instance: "i1", Release: "1.0.0",
			Offers: []handshake.Offer{pingContract.Offer()}})
		resp, err := c.Post(base+protocol.PathHandshake, "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := hello(clientWith(""))
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.Contains(t, body, "unauthenticated")
	code, body = hello(clientWith("scheduler"))
	assert.Equal(t, http.StatusForbidden, code, "a scheduler certificate speaking as a kubelet: %s", body)
	assert.Contains(t, body, "permission_denied")
	code, body = hello(clientWith("kubelet"))
	require.Equal(t, http.StatusOK, code, body)
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal([]byte(body), &w))
	req, _ := http.NewRequest(http.MethodDelete, base+protocol.PathSession, nil)
	req.Header.Set(protocol.HeaderSession, w.Session)
	resp, err := clientWith("kubelet").Do(req)
	require.NoError(t, err)
	resp.Body.Close()

	// The framework's client with the same flags' TLS settings.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewFlags(fs, "kubelet", "127.0.0.1:0", false)
	require.NoError(t, fs.Parse([]string{"--tls-cert", p("kubelet.crt"), "--tls-key", p("kubelet.key"), "--tls-ca", p("ca.crt")}))
	rt, err := NewRuntime(f, io.Discard)
	require.NoError(t, err)
	cfg, err := rt.ClientConfig(base, framework.ClientConfig{})
	require.NoError(t, err)
	c, err := framework.NewClient(pingContract, cfg)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = framework.CallUnary[msg, msg](ctx, c, "Ping", &msg{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(c.Endpoints()[0].URL, "https://"))
}

func TestServerNameOfPeersFoundByDNS(t *testing.T) {
	for _, tc := range []struct {
		spec, flag string // the peer and --tls-server-name
		want       string // the name certificates are checked against; "" for the URL's host
	}{
		{"https://nodecontroller.lockstep.svc:8443", "", ""},
		{"dns+https://nodecontroller.lockstep.svc.cluster.local.:8443", "", "nodecontroller.lockstep.svc.cluster.local"},
		{"srv+https://_https._tcp.extender.lockstep.svc.cluster.local.", "", "extender.lockstep.svc.cluster.local"},
		{"dns+https://nodecontroller.lockstep.svc.cluster.local.:8443", "nodecontroller.lockstep.svc", "nodecontroller.lockstep.svc"},
	} {
		rt := &Runtime{Flags: &Flags{TLSServerName: tc.flag}}
		assert.Equal(t, tc.want, rt.serverName(tc.spec), tc.spec)
	}
}
