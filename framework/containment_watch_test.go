package framework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startContainServer serves the bench contract and the topics contract's
// Assignment topic (selectors node and phase) under mutual TLS, with
// topicOpts, and returns it as an abuseServer, so the abuse test's
// attackers and legitimate peer work against it. Sessions last ten
// minutes: the attackers never heartbeat, and on a loaded machine the
// watches and handshakes of four attackers took longer than a short TTL,
// so the first attacker's session lapsed (its watches closed, its
// refusal handshake_required) before the test was done with it.
func startContainServer(t *testing.T, limits framework.Limits, topicOpts ...framework.TopicOption) *abuseServer {
	t.Helper()
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	a := &abuseServer{ca: ca}
	bench, topics := benchContract(t, "1.0.0"), topicContract(t, "1.0.0")
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds,
		SessionTTL: 10 * time.Minute, Heartbeat: time.Second, Limits: limits}
	a.Running = frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		}
		framework.HandleUnary(s, bench, "ReportStatus", ack)
		framework.HandleBatch(s, bench, "ReportStatuses", ack)
		framework.ServeTopic[topicmsg.Assignment](s, topics, topicmsg.TopicAssignment, topicOpts...)
		framework.ServeOtherTopics(s, topics)
	})
	return a
}

// h2Attacker is an attacker with a certificate of its own speaking
// HTTP/2: many watch streams share a connection.
func (a *abuseServer) h2Attacker(t *testing.T, name string) *attacker {
	cfg := a.tlsConfig(t, certs.Spec{Component: "kubelet", Name: name})
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &attacker{t: t, a: a, cfg: cfg, tr: tr, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// openWatch opens a watch of the Assignment topic with the session token
// and query; it returns the answer's status and code, and keeps an open
// stream (unread) until the test ends.
func (at *attacker) openWatch(token, query string) (int, string) {
	at.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	at.t.Cleanup(cancel)
	path := protocol.WatchPath("topics", "1.0.0", topicmsg.TopicAssignment)
	if query != "" {
		path += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at.a.URL+path, nil)
	require.NoError(at.t, err)
	req.Header.Set(protocol.HeaderSession, token)
	resp, err := at.hc.Do(req)
	require.NoError(at.t, err)
	if resp.StatusCode == http.StatusOK {
		at.t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, ""
	}
	defer resp.Body.Close()
	var w struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&w)
	return resp.StatusCode, w.Code
}

// Attack 3: three kubelet certificates took every watch slot of a topic
// over HTTP/2, and every other kubelet's watch of its own pods was refused.
// A topic's watchers are now shared as sessions are: one peer holds at
// most a quarter, and the last quarter is kept for peers holding few, so
// the fourth attacker is refused and the legitimate kubelet's watch opens.
func TestContainWatchSlotsOfATopicAreSharedByPeers(t *testing.T) {
	const slots = 40 // a peer's share: 10; the reserve: the last 10
	a := startContainServer(t, framework.Limits{WatchersPerSession: 64, WatchersPerPeer: 64}, framework.WithMaxWatchers(slots))
	topics := topicContract(t, "1.0.0")
	before := refusals(t, a.Server, "watchers_per_topic_per_peer")
	var first *attacker
	var firstToken string
	for c := range 4 {
		at := a.h2Attacker(t, fmt.Sprintf("evil-%d", c))
		code, token := at.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, fmt.Sprintf("evil-%d", c)))
		require.Equal(t, http.StatusOK, code, token)
		if c == 0 {
			first, firstToken = at, token
		}
		opened := 0
		for i := range slots {
			code, v := at.openWatch(token, fmt.Sprintf("node=evil-%d-%d", c, i))
			if code == http.StatusOK {
				opened++
				continue
			}
			require.Equal(t, string(framework.CodeResourceExhausted), v)
		}
		if c < 3 {
			assert.Equal(t, slots/4, opened, "attacker %d holds its share", c)
		} else {
			assert.LessOrEqual(t, opened, slots/4/2, "the fourth attacker takes no more than a peer holding few may")
		}
	}
	assert.Equal(t, 3.0*(slots-slots/4), refusals(t, a.Server, "watchers_per_topic_per_peer")-before)
	assert.Positive(t, refusals(t, a.Server, "watchers_per_topic"), "the reserve refuses the peer that holds much")

	// The refusal names its limit for a program, as the counter's label
	// does: {"code":"resource_exhausted","details":{"limit":…}}.
	req, err := http.NewRequest(http.MethodGet, a.URL+protocol.WatchPath("topics", "1.0.0", topicmsg.TopicAssignment)+"?node=one-more", nil)
	require.NoError(t, err)
	req.Header.Set(protocol.HeaderSession, firstToken)
	resp, err := first.hc.Do(req)
	require.NoError(t, err)
	var refusal struct {
		Code    string
		Details struct{ Limit string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refusal))
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, string(framework.CodeResourceExhausted), refusal.Code)
	assert.Equal(t, "watchers_per_topic_per_peer", refusal.Details.Limit)

	good := a.attackerAs(t, "good-node")
	code, token := good.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, "good-node"))
	require.Equal(t, http.StatusOK, code, token)
	code, v := good.openWatch(token, "node=good-node")
	assert.Equal(t, http.StatusOK, code, "the legitimate kubelet's watch of its own pods opens: %s", v)
}
