package framework_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// An operator's identity may ask a dry-run handshake on behalf of the
// contract's client component, and nothing more: not a real handshake, not
// from a non-operator identity, not for another component than the hello
// claims, not for a role the contract does not give that component. It
// opens no session and claims no instance.
func TestMTLSDryRunOnBehalfOf(t *testing.T) {
	m := startMTLSServer(t)
	operator := m.peer(t, m.issue(t, nil, certs.Spec{Component: "operator", Name: "alice"}))
	scheduler := m.peer(t, m.issue(t, nil, certs.Spec{Component: "scheduler", Name: "s-0"}))
	node1 := m.peer(t, m.issue(t, nil, certs.Spec{Component: "kubelet", Name: "node-1"}))
	a, token := node1.handshake("kubelet", "kubelet-a")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)

	ask := func(p *mtlsPeer, dryRun bool, behalf, component, instance string) (int, framework.Code, handshake.Reason, handshake.Welcome) {
		t.Helper()
		c := benchContract(t, "1.0.0")
		hello, err := json.Marshal(handshake.Hello{Contract: c.Name(), Component: component, Instance: instance,
			Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
		require.NoError(t, err)
		u := m.URL + protocol.PathHandshake
		if dryRun {
			u += "?" + protocol.QueryDryRun + "=1"
		}
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(hello))
		require.NoError(t, err)
		if behalf != "" {
			req.Header.Set(protocol.HeaderOnBehalfOf, behalf)
		}
		resp, err := p.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var w struct {
			handshake.Welcome
			Code    framework.Code     `json:"code"`
			Details *handshake.Refusal `json:"details"`
		}
		require.NoError(t, json.Unmarshal(b, &w), "%s", b)
		var reason handshake.Reason
		if w.Details != nil {
			reason = w.Details.Reason
		}
		return resp.StatusCode, w.Code, reason, w.Welcome
	}

	status, _, _, w := ask(operator, true, "kubelet", "kubelet", "lockstepctl-check")
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, w.Session, "a dry run opens no session")
	assert.Equal(t, "1.0.0", w.Version)
	// An instance another identity holds is not claimed by asking.
	status, _, _, _ = ask(operator, true, "kubelet", "kubelet", "kubelet-a")
	assert.Equal(t, http.StatusOK, status)
	assert.Len(t, m.Server.Sessions(), 1, "only node-1's session")
	assert.Equal(t, http.StatusOK, node1.call(token).status, "node-1 keeps its session")

	for _, tc := range []struct {
		name      string
		p         *mtlsPeer
		dryRun    bool
		behalf    string
		component string
		code      framework.Code
		reason    handshake.Reason
	}{
		{"without the header, the claim rule holds", operator, true, "", "kubelet", framework.CodePermissionDenied, ""},
		{"a real handshake on behalf", operator, false, "kubelet", "kubelet", framework.CodeInvalidArgument, ""},
		{"a non-operator identity", scheduler, true, "kubelet", "kubelet", framework.CodePermissionDenied, ""},
		{"the client component's own identity is no operator", node1, true, "kubelet", "kubelet", framework.CodePermissionDenied, ""},
		{"the header names another component than the hello", operator, true, "scheduler", "kubelet", framework.CodeInvalidArgument, ""},
		{"a component the contract does not let call", operator, true, "nodecontroller", "nodecontroller", framework.CodePermissionDenied, handshake.ReasonRoleMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code, reason, w := ask(tc.p, tc.dryRun, tc.behalf, tc.component, "lockstepctl-check")
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.code.HTTPStatus(), status)
			assert.Equal(t, tc.reason, reason)
			assert.Empty(t, w.Session)
		})
	}
	assert.Len(t, m.Server.Sessions(), 1, "no entry on behalf opened a session")
}
