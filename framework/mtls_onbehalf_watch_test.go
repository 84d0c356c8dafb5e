package framework_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// An operator's watch on behalf of the client component streams the topic
// without a session: it makes no server ready, counts against the
// operator's own watcher share, and is refused to other identities and
// for other components.
func TestMTLSWatchOnBehalfOf(t *testing.T) {
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{
		cfg: func(c *framework.ServerConfig) {
			c.MTLS = creds
			c.RequirePeers = []string{"topics"}
			c.Limits.WatchersPerPeer, c.Limits.WatchersPerSession = 1, 1
		},
		state: func(ts *topicServer) { require.NoError(t, ts.health.Set(health(1, 1, 0))) },
	})
	client := func(spec certs.Spec) *http.Client {
		cert, err := ca.Issue(spec)
		require.NoError(t, err)
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	operator := client(certs.Spec{Component: "operator", Name: "alice"})
	scheduler := client(certs.Spec{Component: "scheduler", Name: "s-0"})
	watchURL := ts.URL + protocol.WatchPath("topics", "1.0.0", topicmsg.TopicNodeHealth)
	watch := func(ctx context.Context, hc *http.Client, behalf string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL, nil)
		require.NoError(t, err)
		req.Header.Set(protocol.HeaderOnBehalfOf, behalf)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		return resp
	}
	codeOf := func(resp *http.Response) framework.Code {
		t.Helper()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var w struct {
			Code framework.Code `json:"code"`
		}
		_ = json.Unmarshal(b, &w)
		return w.Code
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := watch(ctx, operator, "kubelet")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	var frames []string
	for len(frames) == 0 || !strings.Contains(frames[len(frames)-1], `"synced"`) {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "frames so far: %v", frames)
		frames = append(frames, line)
	}
	assert.Contains(t, frames[0], `"node-001"`)
	assert.Empty(t, ts.Server.Sessions(), "a watch on behalf opens no session")
	assert.Error(t, ts.Server.Ready(), "and makes no server ready")
	st := ts.stats(t, topicmsg.TopicNodeHealth)
	require.Len(t, st.Watchers, 1)

	// The operator's second watch is over the operator's share.
	assert.Equal(t, framework.CodeResourceExhausted, codeOf(watch(ctx, operator, "kubelet")))
	assert.Equal(t, framework.CodePermissionDenied, codeOf(watch(ctx, scheduler, "kubelet")), "not an operator")
	assert.Equal(t, framework.CodeInvalidArgument, codeOf(watch(ctx, operator, "scheduler")), "not the contract's client")

	cancel()
	require.Eventually(t, func() bool { return len(ts.stats(t, topicmsg.TopicNodeHealth).Watchers) == 0 }, 10*time.Second, 5*time.Millisecond,
		"the watcher goes with its stream")
}
