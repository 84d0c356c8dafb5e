package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRollingUpgrade runs the demo's scenario, as make demo does, and
// checks its story: the invariants held, the pairs whose client came up
// first were blocked for about the skew and then resumed, the legacy
// extender served every call, and the files were written. It is the
// to-node loop's test across a rolling upgrade of the node controller:
// every pod the scheduler placed, before, during and after the replicas'
// upgrade, was reported Running (or ended) by the kubelet of the node it chose
// within runBound (the invariant pods-run-where-placed), unless it was
// evicted first for a pod of higher priority: pods were preempted, and
// every eviction made room for a pod then bound there. Then the minor
// release, nodestatus 2.1.0, rolls out with no fork mode: the kubelet,
// upgraded first, is not blocked at all, and ends agreeing on 2.1.0 with
// node controllers that heard its kernel versions.
//
// Its invariants are real-time bounds of a whole control plane in one
// process (sessions of 1 s, a node grace period of 3 s, pods Running
// within 5 s). The race detector makes every component several times
// slower, and on a loaded 2-core machine that alone breaks them before the
// first upgrade, so make test runs this test without it, and alone once
// the other tests are done (the Makefile's NORACE_TESTS): beside make
// test's own race build it broke nodes-stay-known at load 20. The
// components' own tests and the process test run race-detected.
func TestRollingUpgrade(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	t.Cleanup(func() { keepOnFailure(t, dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Out: &out, OutputDir: dir, Skew: time.Second, Nodes: 6})
	t.Log("\n" + out.String())
	require.NoError(t, err)

	s := summarize(res.Report, "one process", inProcessInvariants)
	blocked := map[string]time.Duration{}
	for _, b := range s.blocked {
		blocked[b.pair] += b.to - b.from
	}
	for _, pair := range []string{"kubelet→nodecontroller", "scheduler→nodecontroller"} {
		assert.Greater(t, blocked[pair], 700*time.Millisecond, "%s waited for its peer's upgrade", pair)
		assert.Less(t, blocked[pair], 5*time.Second, "%s resumed once its peer was upgraded", pair)
	}
	var minorFrom time.Duration
	for _, st := range res.Report.Timeline.Steps {
		if st.Text == "upgrade kubelet to v2.1" {
			minorFrom = st.From
		}
	}
	require.Positive(t, minorFrom, "the minor release was rolled out")
	// The v2.1 kubelet's handshakes were never refused for their version,
	// not even by the v2 node controllers it met first: it speaks 2.0.0
	// too. Its node clients' instances end in the suffix it drew; the
	// node controllers log every refusal (components.log, at debug).
	logs, err := os.ReadFile(filepath.Join(dir, "components.log"))
	require.NoError(t, err)
	at21 := regexp.MustCompile(`contract=nodestatus version=2\.1\.0 peer=kubelet instance=node-\d+\.(\w+)`).FindSubmatch(logs)
	require.NotNil(t, at21, "a node controller opened a nodestatus 2.1.0 session")
	at20 := regexp.MustCompile(`contract=nodestatus version=2\.0\.0 peer=kubelet instance=node-\d+\.` + string(at21[1])).Find(logs)
	assert.NotNil(t, at20, "the v2.1 kubelet agreed on 2.0.0 with a v2 node controller first")
	refused := regexp.MustCompile(`hello refused.* reason=version_mismatch peer=kubelet instance=node-\d+\.` + string(at21[1])).Find(logs)
	assert.Nil(t, refused, "the v2.1 kubelet was refused for its version: %s", refused)
	assert.Equal(t, []string{"nodestatus 2.1.0"}, res.Report.Agreed["kubelet→nodecontroller"])
	assert.Regexp(t, `nodecontroller v2\.1: .*; [1-9]\d* nodes reported their kernel version`, out.String())
	for _, c := range s.calls {
		assert.Positive(t, len(c.OK), c.Label)
		if strings.HasSuffix(c.Label, "legacy-extender") {
			assert.Empty(t, c.Failed, "the legacy extender is served throughout")
		}
	}
	assert.Equal(t, map[string]string{"kubelet": "v2.1", "nodecontroller#0": "v2.1", "nodecontroller#1": "v2.1", "nodecontroller#2": "v2.1",
		"scheduler": "v2", "extender": "v2", "legacy-extender": "v1"}, res.Report.Final)
	leaders := 0
	for _, m := range regexp.MustCompile(`elected to write NodeHealth (\d+) time`).FindAllStringSubmatch(out.String(), -1) {
		if m[1] != "0" {
			leaders++
		}
	}
	assert.GreaterOrEqual(t, leaders, 2,
		"the NodeHealth writer moved between replicas as they restarted; watchers-converge says the informers followed it")
	assert.Equal(t, []string{"extender 2.0.0"}, res.Report.Agreed["scheduler→extender"])
	assert.Equal(t, []string{"extender 1.0.0"}, res.Report.Agreed["scheduler→legacy-extender"])
	for _, f := range []string{"timeline.svg", "timeline.html", "timeline.txt", "components.log"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Positive(t, st.Size(), f)
	}
	assert.Contains(t, out.String(), "verdict: ok")

	var ncFrom, ncTo time.Duration
	for _, st := range res.Report.Timeline.Steps {
		if st.Text == "upgrade nodecontroller#0 to v2" {
			ncFrom = st.From
		}
		if st.Text == "upgrade nodecontroller#2 to v2" {
			ncTo = st.To
		}
	}
	require.Positive(t, ncTo)
	var bound, running, evicted []time.Duration
	for _, c := range res.Report.Timeline.Calls {
		switch {
		case strings.HasPrefix(c.Label, "pods bound"):
			bound = c.OK
		case strings.HasPrefix(c.Label, "pods Running"):
			running = c.OK
		case strings.HasPrefix(c.Label, "pods evicted"):
			evicted = c.OK
		}
	}
	require.NotEmpty(t, bound)
	assert.Less(t, bound[0], ncFrom, "pods were placed before the node controller's upgrade")
	assert.Greater(t, bound[len(bound)-1], ncTo, "and after it")
	require.NotEmpty(t, evicted, "pods were preempted")
	assert.Less(t, evicted[0], ncFrom, "before the node controller's upgrade")
	assert.LessOrEqual(t, len(bound)-len(running), len(evicted), "every pod placed was reported Running where it was placed, but pods evicted before they ran")
	for _, inv := range s.invariants {
		if inv.name == "pods-run-where-placed" || inv.name == "evictions-made-room" || inv.name == "pods-preempted" {
			assert.False(t, inv.broken, inv.name)
		}
	}
}

// keepOnFailure copies a failed run's files (the timeline and the
// components' log) out of the test's temporary directory, which the test
// removes, so that a failure seen once can be read afterwards.
func keepOnFailure(t *testing.T, dir string) {
	if !t.Failed() {
		return
	}
	kept, err := os.MkdirTemp("", "lockstep-demo-failed-")
	if err == nil {
		err = os.CopyFS(kept, os.DirFS(dir))
	}
	if err != nil {
		t.Logf("the run's files were not kept: %v", err)
		return
	}
	t.Logf("the run's files are kept in %s", kept)
}
