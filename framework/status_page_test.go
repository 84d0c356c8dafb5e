package framework_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// The status JSON writes durations as "5s" and times as RFC 3339, and says
// what every peer agreed on and in which state it is. The server runs on
// a fake clock (see liveOnAFakeClock).
func TestStatusJSONIsReadable(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "1.0.0", liveOnAFakeClock(t))
	cl := benchClient(t, "1.0.0", []string{srv.URL})
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))

	a := do(t, http.MethodGet, srv.URL+protocol.PathStatus, nil, nil)
	require.Equal(t, http.StatusOK, a.status)
	assert.Equal(t, "application/json", a.header.Get("Content-Type"))
	var raw struct {
		Now      string `json:"now"`
		Sessions []map[string]any
		Served   []framework.ServedVersion
	}
	require.NoError(t, json.Unmarshal(a.body, &raw))
	_, err := time.Parse(time.RFC3339, raw.Now)
	assert.NoError(t, err)
	require.Len(t, raw.Sessions, 1)
	s := raw.Sessions[0]
	assert.Equal(t, "1.0.0", s["version"])
	assert.Equal(t, framework.SessionLive, s["state"])
	assert.Regexp(t, `^[0-9.]+(ms|s|m)`, s["age"], "a Go duration string")
	_, err = time.Parse(time.RFC3339, s["since"].(string))
	assert.NoError(t, err)
	assert.Equal(t, []framework.ServedVersion{{Contract: "bench", Version: "1.0.0",
		Fingerprint: benchContract(t, "1.0.0").Fingerprint(), Client: "kubelet"}}, raw.Served)

	var st framework.ServerStatus
	require.NoError(t, json.Unmarshal(a.body, &st), "the JSON reads back into ServerStatus")
	assert.Equal(t, cl.Instance(), st.Sessions[0].Peer.Instance)
}

// A browser gets a page; it is rendered by a real one (headless Chromium)
// and must show the peers, the topics and the blocked callers of the
// component's own client.
func TestStatusPageRendersInABrowser(t *testing.T) {
	browser := chromium(t)
	ts := startTopicServer(t, "127.0.0.1:0", "1.0.0", topicServerOpts{cfg: liveOnAFakeClock(t)})
	require.NoError(t, ts.health.Set(&topicmsg.NodeHealth{Node: "node-1", Ready: true}))
	a := topicClient(t, "1.0.0", []string{ts.URL}, func(c *framework.ClientConfig) { c.Instance = "agent-a" })
	b := topicClient(t, "1.0.0", []string{ts.URL}, func(c *framework.ClientConfig) { c.Instance = "agent-b" })
	require.NoError(t, a.WaitReady(timeout(t, 10*time.Second)))
	require.NoError(t, b.WaitReady(timeout(t, 10*time.Second)))

	// The component is also a client of a peer that is not there: a call
	// blocks, and the page says so.
	orphan, err := framework.NewClient(benchContract(t, "1.0.0"), framework.ClientConfig{Component: "kubelet",
		Release: "1.31.0", Endpoints: []string{"http://127.0.0.1:1"}, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = orphan.Close() })
	ts.Server.AddClient(orphan)
	callCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](callCtx, orphan, "ReportStatus", benchmsg.Node(1))
		done <- err
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return orphan.Status().Blocked == 1 }, 10*time.Second, 5*time.Millisecond)

	dom := dumpDOM(t, browser, ts.URL+protocol.PathStatus)
	assert.Contains(t, dom, "<title>nodecontroller 1.31.0: lockstep status</title>")
	peers := regexp.MustCompile(`<tr class="peer">(.*?)</tr>`).FindAllStringSubmatch(dom, -1)
	require.Len(t, peers, 2, "both peers are listed:\n%s", dom)
	for i, inst := range []string{"agent-a", "agent-b"} {
		assert.Contains(t, peers[i][1], "<td>"+inst+"</td>")
		assert.Contains(t, peers[i][1], "<td>1.0.0</td>", "agreed version")
		assert.Contains(t, peers[i][1], "<td>live</td>")
	}
	assert.Regexp(t, `<td>NodeHealth</td><td>1</td><td class="ok">1</td>`, dom, "topic with its key and writer")
	assert.Regexp(t, `<td>bench</td><td>1.0.0</td><td>nodecontroller</td><td class="bad">no</td><td>1</td><td>[0-9.]+(µs|ms|s)</td>`, dom,
		"the blocked caller and for how long")

	// JSON stays the default for programs.
	raw := do(t, http.MethodGet, ts.URL+protocol.PathStatus, map[string]string{"Accept": "*/*"}, nil)
	assert.Equal(t, "application/json", raw.header.Get("Content-Type"))
}

// liveOnAFakeClock gives a server a fake clock that stands still until the
// test ends, so that the sessions its status shows are live: a session is
// late once its server's clock passed two heartbeat intervals (400 ms for
// the test servers) since its last renewal, and on a loaded machine the
// clients' heartbeats on real time, and the page's render in a browser
// started after them, take longer than that (a run rendered a peer
// renewed 402 ms before as late). The clock moves once the test ends
// (its context is done before any cleanup runs), for the server's drain
// to finish.
func liveOnAFakeClock(t *testing.T) func(*framework.ServerConfig) {
	t.Helper()
	fc := clockwork.NewFakeClock()
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) }) // the last cleanup: after the server's stop
	ended := t.Context()
	go func() {
		<-ended.Done()
		runClock(fc, stopped)
	}()
	return func(c *framework.ServerConfig) { c.Clock = fc }
}

// chromium returns the path of a Chromium that can run headless, skipping
// the test when there is none (`make test` installs it when it can).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH, so the status page cannot be rendered: `make test` installs it (apt-get install -y chromium) when run as root")
	return ""
}

// dumpDOM renders url in headless Chromium and returns the DOM it built.
func dumpDOM(t *testing.T, browser, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	return string(out)
}
