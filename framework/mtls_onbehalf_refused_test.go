package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Lockstep-On-Behalf-Of is for a dry-run handshake and a watch without a
// session only: on a call, a watch with a session, a topic write or a
// heartbeat it is refused invalid_argument (docs/security.md, "Dry runs
// and watches on behalf"), from the operator's identity and from the
// client component's own alike, rather than ignored. The same requests
// without it are served, so the refusal is the header's.
func TestOnBehalfOfIsRefusedOnEntriesWithASession(t *testing.T) {
	bench, topics := benchContract(t, "1.0.0"), topicContract(t, "1.0.0")
	m := startLimitsServer(t, framework.Limits{}, func(s *framework.Server) {
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		}
		framework.HandleUnary(s, bench, "ReportStatus", ack)
		framework.HandleBatch(s, bench, "ReportStatuses", ack)
		framework.ServeTopic[topicmsg.NodeHealth](s, topics, topicmsg.TopicNodeHealth)
		framework.ServeClientTopic[topicmsg.Lease](s, topics, topicmsg.TopicLease)
		framework.ServeOtherTopics(s, topics)
	})
	operator := m.peer(t, m.issue(t, nil, certs.Spec{Component: "operator", Name: "alice"}))
	node1 := m.kubelet(t, "node-1")
	benchToken, topicsToken := node1.session(bench, "node-1-bench"), node1.session(topics, "node-1-topics")
	heartbeat, err := json.Marshal(map[string]any{"sessions": []string{benchToken}})
	require.NoError(t, err)

	// send makes one request as p in session token, with the header naming
	// behalf unless empty, and returns its status and error code; a watch's
	// stream is ended once its status is known.
	send := func(p *mtlsPeer, method, path, token, behalf string, body []byte) (int, framework.Code) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, m.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(protocol.HeaderSession, token)
		if behalf != "" {
			req.Header.Set(protocol.HeaderOnBehalfOf, behalf)
		}
		resp, err := p.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, ""
		}
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var w struct {
			Code framework.Code `json:"code"`
		}
		require.NoError(t, json.Unmarshal(b, &w), "%s", b)
		return resp.StatusCode, w.Code
	}

	for _, tc := range []struct {
		name, method, path, token string
		body                      []byte
	}{
		{"a call", http.MethodPost, protocol.CallPath("bench", "1.0.0", "ReportStatus"), benchToken, mustJSON(t, benchmsg.Node(1))},
		{"a watch with a session", http.MethodGet, protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth), topicsToken, nil},
		{"a topic write", http.MethodPost, protocol.TopicPath("topics", "1.0.0", topicmsg.TopicLease), topicsToken,
			mustJSON(t, map[string]any{"set": topicmsg.Lease{Node: "node-1", Renewals: 1}})},
		{"a heartbeat", http.MethodPost, protocol.PathHeartbeat, benchToken, heartbeat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := send(node1, tc.method, tc.path, tc.token, "", tc.body)
			require.Equal(t, http.StatusOK, status, "without the header: %s", code)
			for _, p := range []*mtlsPeer{node1, operator} {
				status, code = send(p, tc.method, tc.path, tc.token, "kubelet", tc.body)
				assert.Equal(t, framework.CodeInvalidArgument, code)
				assert.Equal(t, http.StatusBadRequest, status)
			}
		})
	}
	assert.Len(t, m.Server.Sessions(), 2, "node-1's sessions only")
}
