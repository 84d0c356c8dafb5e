package framework_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// plainV1 is a contract whose methods a caller that does not handshake
// reaches at declared paths; Describe has none.
var plainV1 = framework.MustContract(handshake.Contract{
	Name: "plaininfo", Version: "1.0.0", Server: "extender", Client: "scheduler",
	Methods: map[string]handshake.Method{
		"Report":   {Request: "Status", Response: "Ack", Path: "report"},
		"Describe": {Request: "Status", Response: "Ack"},
	},
	Schemas: map[string]json.RawMessage{
		"Status": json.RawMessage(`{"type":"object","required":["node","ready"],"additionalProperties":false,
			"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"}}}`),
		"Ack": json.RawMessage(`{"type":"object","required":["ok"],"additionalProperties":false,"properties":{"ok":{"type":"boolean"}}}`),
	},
})

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServePlainReachesTheRegisteredHandlerWithValidation serves a version
// to callers that do not handshake: at the declared path under the prefix,
// through the interceptors, validated, with coded errors; a lockstep
// client pinned to it calls it too.
func TestServePlainReachesTheRegisteredHandlerWithValidation(t *testing.T) {
	var handled, intercepted atomic.Int64
	var sawPlain, sawCall atomic.Bool
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "extender", Release: "1.30.0",
		Interceptors: []framework.Interceptor{func(next framework.CallFunc) framework.CallFunc {
			return func(ctx context.Context, call *framework.Call) (any, error) {
				intercepted.Add(1)
				return next(ctx, call)
			}
		}}}, func(s *framework.Server) {
		h := func(ctx context.Context, st *StatusV1) (*AckV1, error) {
			handled.Add(1)
			sawPlain.Store(framework.PlainRequest(ctx) != nil)
			call := framework.CallFromContext(ctx)
			sawCall.Store(call != nil && call.Method == "Report" && call.Version == "1.0.0" && call.Peer.Component == "")
			return &AckV1{OK: st.Ready}, nil
		}
		framework.HandleUnary(s, plainV1, "Report", h)
		framework.HandleUnary(s, plainV1, "Describe", h)
		s.ServePlain(plainV1, "/ext/")
	})

	status, body := postJSON(t, srv.URL+"/ext/report", `{"node":"n1","ready":true}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"ok":true}`, body)
	assert.True(t, sawPlain.Load(), "the handler sees the plain request")
	assert.True(t, sawCall.Load(), "the handler sees a call without a peer")
	assert.Equal(t, int64(1), intercepted.Load(), "plain calls run the interceptors")

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     framework.Code
	}{
		{"fails the schema", http.MethodPost, "/ext/report", `{"node":"","ready":true}`, 400, framework.CodeInvalidArgument},
		{"not JSON", http.MethodPost, "/ext/report", `node=n1`, 400, framework.CodeInvalidArgument},
		{"not POST", http.MethodGet, "/ext/report", ``, 404, framework.CodeNotFound},
		{"outside the prefix", http.MethodPost, "/report", `{"node":"n1","ready":true}`, 404, framework.CodeNotFound},
		{"a method without a path is not served plain", http.MethodPost, "/ext/Describe", `{"node":"n1","ready":true}`, 404, framework.CodeNotFound},
		{"the lockstep path still needs a session", http.MethodPost, protocol.CallPath("plaininfo", "1.0.0", "Report"),
			`{"node":"n1","ready":true}`, 409, framework.CodeHandshakeRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, bytes.NewBufferString(tc.body))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var e struct{ Code framework.Code }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.code, e.Code)
		})
	}
	assert.Equal(t, int64(1), handled.Load(), "refused requests never reach the handler")

	cl := frameworktest.NewClient(t, plainV1, framework.ClientConfig{Component: "scheduler", Release: "1.30.0",
		Pinned: []framework.PinnedPeer{{URL: srv.URL + "/ext", Version: "1.0.0"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := framework.CallUnary[StatusV1, AckV1](ctx, cl, "Report", &StatusV1{Node: "n2", Ready: false})
	require.NoError(t, err)
	assert.False(t, ack.OK)
	assert.Equal(t, int64(2), handled.Load())
}

func TestServePlainSetupMistakesPanic(t *testing.T) {
	srv, err := framework.NewServer(framework.ServerConfig{Component: "extender", Release: "1.30.0"})
	require.NoError(t, err)
	assert.PanicsWithValue(t, "lockstep: plain serving: plaininfo 1.0.0 method Report has no handler; register the version's handlers first",
		func() { srv.ServePlain(plainV1, "") })
	noPaths := framework.MustContract(handshake.Contract{
		Name: "plaininfo", Version: "2.0.0", Server: "extender", Client: "scheduler",
		Methods: map[string]handshake.Method{"Report": {Request: "Status", Response: "Ack"}},
		Schemas: map[string]json.RawMessage{"Status": json.RawMessage(`{}`), "Ack": json.RawMessage(`{}`)},
	})
	framework.HandleUnary(srv, noPaths, "Report", func(context.Context, *StatusV1) (*AckV1, error) { return &AckV1{}, nil })
	assert.PanicsWithValue(t, "lockstep: plain serving: plaininfo 2.0.0 declares no method paths", func() { srv.ServePlain(noPaths, "") })
}

// TestPinnedPeerPathsOverrideTheDeclaredOnes calls a pinned peer at its
// own path for a method, as a scheduler configuration's verbs name them.
func TestPinnedPeerPathsOverrideTheDeclaredOnes(t *testing.T) {
	var hits atomic.Int64
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ext/report-v1" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(ext.Close)
	cl := frameworktest.NewClient(t, plainV1, framework.ClientConfig{Component: "scheduler", Release: "1.30.0",
		Pinned: []framework.PinnedPeer{{URL: ext.URL + "/ext", Version: "1.0.0", Paths: map[string]string{"Report": "report-v1"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := framework.CallUnary[StatusV1, AckV1](ctx, cl, "Report", &StatusV1{Node: "n1", Ready: true})
	require.NoError(t, err)
	assert.True(t, ack.OK)
	assert.Equal(t, int64(1), hits.Load())

	_, err = framework.NewClient(plainV1, framework.ClientConfig{Component: "scheduler", Release: "1.30.0",
		Pinned: []framework.PinnedPeer{{URL: ext.URL, Version: "1.0.0", Paths: map[string]string{"Bind": "bind"}}}})
	assert.ErrorContains(t, err, "Paths names Bind, which plaininfo 1.0.0 does not declare")
}

// Under mutual TLS a plain caller is admitted like any entry: a verified
// certificate reaches the plain routes (they are the contract's, not a
// binary's own operator-only routes), and no certificate is
// unauthenticated.
func TestServePlainUnderMutualTLS(t *testing.T) {
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "extender", Name: "ext-0"})
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "extender", Release: "1.30.0", MTLS: creds},
		func(s *framework.Server) {
			h := func(ctx context.Context, st *StatusV1) (*AckV1, error) { return &AckV1{OK: st.Ready}, nil }
			framework.HandleUnary(s, plainV1, "Report", h)
			framework.HandleUnary(s, plainV1, "Describe", h)
			s.ServePlain(plainV1, "/ext/")
		})
	post := func(cert *tls.Certificate) (int, string) {
		cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post(srv.URL+"/ext/report", "application/json",
			bytes.NewBufferString(`{"node":"n1","ready":true}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	scheduler := ca.MustIssue(certs.Spec{Component: "scheduler", Name: "sched-0"})
	status, body := post(&scheduler)
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"ok":true}`, body)
	status, body = post(nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, string(framework.CodeUnauthenticated))
}
