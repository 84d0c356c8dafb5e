package framework_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attack 5: watchers with 60 KB selector values were kept, and echoed
// whole in the status: 4,096 of them made one status read 235 MiB. A
// selector value is now bounded (MaxSelectorValueBytes, refused
// invalid_argument and counted as selector_bytes), and the status shows
// at most 256 bytes of a watcher's selection, its length said.
func TestContainSelectorValuesAreBoundedAndClippedInTheStatus(t *testing.T) {
	a := startContainServer(t, framework.Limits{WatchersPerSession: 64, WatchersPerPeer: 64})
	topics := topicContract(t, "1.0.0")
	at := a.h2Attacker(t, "evil")
	code, token := at.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, "evil"))
	require.Equal(t, http.StatusOK, code, token)
	before := refusals(t, a.Server, "selector_bytes")
	for i := range 8 {
		code, v := at.openWatch(token, fmt.Sprintf("node=%s%d", strings.Repeat("x", 60<<10), i))
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, string(framework.CodeInvalidArgument), v, "a 60 KB selector value")
	}
	assert.Equal(t, 8.0, refusals(t, a.Server, "selector_bytes")-before)
	long := strings.Repeat("y", framework.MaxSelectorValueBytes-4)
	for i := range 32 {
		code, v := at.openWatch(token, fmt.Sprintf("node=%s%04d", long, i))
		require.Equal(t, http.StatusOK, code, "a selector value of MaxSelectorValueBytes: %s", v)
	}
	good := a.attackerAs(t, "good-node")
	code, goodToken := good.post(http.MethodPost, protocol.PathHandshake, "", abuseHello(topics, "good-node"))
	require.Equal(t, http.StatusOK, code, goodToken)
	code, v := good.openWatch(goodToken, "node=good-node")
	require.Equal(t, http.StatusOK, code, "the legitimate kubelet's watch: %s", v)

	var selections []string
	for _, st := range a.Server.TopicStats() {
		for _, w := range st.Watchers {
			selections = append(selections, w.Selection)
		}
	}
	require.Len(t, selections, 33)
	assert.Contains(t, selections, "node=good-node", "a short selection is shown whole")
	for _, s := range selections {
		assert.LessOrEqual(t, len(s), 256+len("… (1029 bytes)"), "the status clips a selection")
	}
	op := a.attackerAs(t, "status-reader")
	op.cfg = a.tlsConfig(t, certs.Spec{Component: "operator", Name: "alice"})
	op.tr.TLSClientConfig = op.cfg
	resp, err := op.hc.Get(a.URL + protocol.PathStatus)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Less(t, len(body), 64<<10, "a status read of 33 watchers with 1 KB selector values")
	assert.True(t, strings.Contains(string(body), "… (1029 bytes)"), "the status says how long a clipped selection is")
}
