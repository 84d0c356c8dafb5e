package framework_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
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

// The status output's size: it listed every session and every watcher,
// so one certificate's 9,000 sessions made each status read 1.8 MB, and a
// server at its bounds would answer tens of megabytes to each. The status
// served lists at most StatusMaxSessions sessions and StatusMaxWatchers
// watchers of a topic, counts them all, and says what it left out, in the
// JSON and on the page. Beyond the bound, sessions are taken in turns
// from each identity, so the attacker's instance names ("aaa-…" would come
// first in the status's order) cannot push a legitimate peer out of view,
// and each listed session names the identity that holds it.
func TestContainTheStatusOutputIsBounded(t *testing.T) {
	// Parallel: its server, CA and peers are its own, and so is the status
	// it reads; its sessions outlive a loaded machine (TTL of a minute).
	t.Parallel()
	// Sessions live a minute: a thousand handshakes take longer than a
	// default TTL on a loaded machine under the race detector, and nothing
	// here renews them.
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	a := &abuseServer{ca: ca}
	topics := topicContract(t, "1.0.0")
	a.Running = frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds,
		SessionTTL: time.Minute, Heartbeat: 10 * time.Second}, func(s *framework.Server) {
		framework.ServeTopic[topicmsg.Assignment](s, topics, topicmsg.TopicAssignment)
		framework.ServeOtherTopics(s, topics)
	})
	evil := a.h2Attacker(t, "evil")
	const evilSessions, watchers = framework.StatusMaxSessions + 20, framework.StatusMaxWatchers + 10
	const sessions = evilSessions + 2
	tokens := make([]string, evilSessions)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < evilSessions; i += 16 {
				code, token := evil.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, fmt.Sprintf("aaa-%04d", i)))
				assert.Equal(t, http.StatusOK, code, token)
				tokens[i] = token
			}
		}()
	}
	wg.Wait()
	good := a.h2Attacker(t, "node-1")
	for _, instance := range []string{"zz-node-1", "zz-node-1b"} {
		code, token := good.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, instance))
		require.Equal(t, http.StatusOK, code, token)
	}
	for i := range watchers {
		code, v := evil.openWatch(tokens[0], fmt.Sprintf("node=n%d", i))
		require.Equal(t, http.StatusOK, code, v)
	}

	op := a.attackerAs(t, "status-reader")
	op.cfg = a.tlsConfig(t, certs.Spec{Component: "operator", Name: "alice"})
	op.tr.TLSClientConfig = op.cfg
	read := func(accept string) []byte {
		req, err := http.NewRequest(http.MethodGet, a.URL+protocol.PathStatus, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", accept)
		resp, err := op.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}
	body := read("application/json")
	var st framework.ServerStatus
	require.NoError(t, json.Unmarshal(body, &st))
	assert.Len(t, st.Sessions, framework.StatusMaxSessions)
	assert.Equal(t, sessions, st.SessionCount)
	assert.Equal(t, sessions, st.PeersByVersion["topics"]["1.0.0"], "the counts cover every session")
	require.Len(t, st.Topics, 5, "Assignment and the contract's other topics, served for Start")
	assert.Equal(t, topicmsg.TopicAssignment, st.Topics[0].Topic)
	assert.Len(t, st.Topics[0].Watchers, framework.StatusMaxWatchers)
	assert.Equal(t, watchers, st.Topics[0].WatcherCount)
	for _, tp := range st.Topics[1:] {
		assert.Zero(t, tp.WatcherCount, tp.Topic)
	}
	assert.Contains(t, st.Truncated, fmt.Sprintf("%d of %d sessions (in turns per identity)", framework.StatusMaxSessions, sessions))
	byIdentity := map[string][]string{}
	for _, s := range st.Sessions {
		byIdentity[s.Identity] = append(byIdentity[s.Identity], s.Peer.Instance)
	}
	assert.Equal(t, []string{"zz-node-1", "zz-node-1b"}, byIdentity["lockstep://kubelet/node-1"],
		"the legitimate identity's sessions are listed, and named by its identity")
	assert.Len(t, byIdentity["lockstep://kubelet/evil"], framework.StatusMaxSessions-2, "the attacker's fill the rest, named by its identity")
	assert.Len(t, byIdentity, 2)
	assert.True(t, slices.IsSortedFunc(st.Sessions, func(x, y framework.SessionInfo) int { return strings.Compare(x.Peer.Instance, y.Peer.Instance) }),
		"the listed sessions keep the status's order")
	assert.Contains(t, st.Truncated, fmt.Sprintf("%d of the %d watchers of topics 1.0.0 topic Assignment", framework.StatusMaxWatchers, watchers))
	assert.Less(t, len(body), 512<<10, "the status read is bounded by the server's bounds, not its peers' numbers")

	page := string(read("text/html"))
	assert.True(t, strings.Contains(page, `id="truncated"`), "the page says it is truncated")
	assert.Equal(t, framework.StatusMaxSessions, strings.Count(page, `<tr class="peer">`))
	assert.Contains(t, page, fmt.Sprintf("%d sessions, %d listed, taken in turns from each identity", sessions, framework.StatusMaxSessions))
	assert.Contains(t, page, "<td>zz-node-1</td><td>lockstep://kubelet/node-1</td>", "the page names each session's identity")

	assert.Len(t, a.Server.Status().Sessions, sessions, "Server.Status itself is whole")
}
