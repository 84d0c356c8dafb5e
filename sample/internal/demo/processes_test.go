package demo

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startDNS serves NodeControllerName's A record (127.0.0.1) on a UDP port
// of 127.0.0.1, counting the queries for it.
func startDNS(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var asked atomic.Int64
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		q := req.Question[0]
		switch {
		case !strings.EqualFold(q.Name, NodeControllerName):
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			asked.Add(1)
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
				A: net.IPv4(127, 0, 0, 1)})
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String(), &asked
}

// The plan's steps, as RunProcesses numbers them.
const (
	stepKubeletSkew  = 9  // kubelet v2, node controller still v1
	stepNodeCtrlSkew = 11 // node controller v2, scheduler still v1
	stepSchedulerUp  = 14 // scheduler v2 in fork mode, extender still v1
	stepExtenderUp   = 17 // extender v2 in fork mode
)

// during returns the observations of component in the second part of a
// step, once what the step started had time to show: those of the sample
// rounds that began stepSettle or more into it. The step is a hold, which
// lasts until holdRounds such rounds saw every process, however slow the
// machine.
func during(res *ProcessResult, component string, step int) []Observation {
	from := res.Report.Timeline.Steps[step-1].From
	var out []Observation
	for _, o := range res.Observations {
		if o.Step == step && o.Component == component && o.At-from >= stepSettle {
			out = append(out, o)
		}
	}
	return out
}

// reached checks that component comes, within step, to a state holds
// accepts (holds returns "" for it, else what differs) and keeps it for
// the rest of the step. When in the step the state appears is not fixed:
// a client that a draining peer refused backs off (100 ms, doubling to
// 500 ms, with jitter) before it dials the upgraded one. That it appears,
// and then stays, is what the step must show.
func reached(t *testing.T, obs []Observation, component string, step int, what string, holds func(Observation) string) {
	t.Helper()
	var mine []Observation
	for _, o := range obs {
		if o.Step == step && o.Component == component {
			mine = append(mine, o)
		}
	}
	i := slices.IndexFunc(mine, func(o Observation) bool { return holds(o) == "" })
	if i < 0 {
		last := "it was never observed"
		if len(mine) > 0 {
			last = holds(mine[len(mine)-1])
		}
		t.Errorf("step %d: never %s %s; at the step's end: %s", step, component, what, last)
		return
	}
	for _, o := range mine[i+1:] {
		if why := holds(o); why != "" {
			t.Errorf("step %d: %s %s at %v, then not at %v: %s", step, component, what, mine[i].At, o.At, why)
		}
	}
}

// agreedAt says how o differs from a component holding sessions at
// exactly the versions agreed gives for each of those peers (in the
// peers' order, so that the first difference is always the same one); ""
// when it does not.
func agreedAt(o Observation, agreed map[string][]string) string {
	for _, peer := range slices.Sorted(maps.Keys(agreed)) {
		if !slices.Equal(o.Agreed[peer], agreed[peer]) {
			return fmt.Sprintf("agreed with %s %v, not %v", peer, o.Agreed[peer], agreed[peer])
		}
	}
	return ""
}

// readyAgreedAt is agreedAt for a component that must also be ready.
func readyAgreedAt(o Observation, agreed map[string][]string) string {
	if !o.Ready {
		return "not ready: " + o.ReadyText
	}
	return agreedAt(o, agreed)
}

// TestProcessesUpgradeOneAtATime builds the binaries, runs them as
// separate processes on 127.0.0.1 (the kubelet and the scheduler find the
// node controller through a DNS server the test runs), upgrades them one
// at a time with SIGTERM, and checks from /readyz, /status and /metrics
// that the side that came up first blocked, resumed when its peer was
// upgraded, and that fork mode kept the 1.0.0 extenders served.
func TestProcessesUpgradeOneAtATime(t *testing.T) {
	dnsAddr, asked := startDNS(t)
	// The context only bounds a hang: the run's own steps carry its
	// bounds. It includes building the four binaries, which under the race
	// detector beside the rest of make test took 145 s at load 30 with a
	// warm build cache, and more than 11 minutes at load 35 with a cold
	// one; so it ends just before the test binary's own deadline (make
	// test's per-package timeout), where the failure still names the step.
	ctx, cancel := contextBeforeDeadline(t, 11*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := RunProcesses(ctx, Options{Out: &out, OutputDir: t.TempDir(), BinDir: t.TempDir(), Nodes: 5, Skew: time.Second, DNSServer: dnsAddr})
	t.Log("\n" + out.String())
	require.NoError(t, err)
	assert.Positive(t, asked.Load(), "the node controller was found through DNS")

	// The kubelet came up first: it blocked, and so was its node controller
	// not ready (it has no compatible kubelet).
	kubelet := during(res, Kubelet, stepKubeletSkew)
	require.NotEmpty(t, kubelet)
	for _, o := range kubelet {
		assert.Equal(t, "v2", o.Version)
		assert.False(t, o.Ready, "kubelet v2 is not ready beside a v1 node controller")
		assert.Empty(t, o.Agreed[NodeController], "kubelet v2 holds no session with a v1 node controller")
	}
	nodeController := during(res, NodeController, stepKubeletSkew)
	require.NotEmpty(t, nodeController)
	for _, o := range nodeController {
		assert.False(t, o.Ready, "node controller v1 has no compatible kubelet: %s", o.ReadyText)
	}

	// The node controller followed: the kubelet resumed at 2.0.0, and the v1
	// scheduler blocked on nodehealth.
	reached(t, res.Observations, Kubelet, stepNodeCtrlSkew, "ready at nodestatus 2.0.0", func(o Observation) string {
		return readyAgreedAt(o, map[string][]string{NodeController: {"nodestatus 2.0.0"}})
	})
	scheduler := during(res, Scheduler, stepNodeCtrlSkew)
	require.NotEmpty(t, scheduler)
	for _, o := range scheduler {
		assert.Equal(t, "v1", o.Version)
		assert.False(t, o.Ready)
		assert.Contains(t, o.ReadyText, "node controller")
		assert.Empty(t, o.Agreed[NodeController])
		assert.Equal(t, []string{"extender 1.0.0"}, o.Agreed[LegacyExtender])
	}

	// The scheduler followed in fork mode: nodehealth resumed at 2.0.0, and
	// both extenders are called at 1.0.0 until the extender is upgraded.
	reached(t, res.Observations, Scheduler, stepSchedulerUp, "ready at nodehealth 2.0.0 and both extenders at 1.0.0", func(o Observation) string {
		return readyAgreedAt(o, map[string][]string{
			NodeController: {"nodehealth 2.0.0"}, Extender: {"extender 1.0.0"}, LegacyExtender: {"extender 1.0.0"}})
	})
	reached(t, res.Observations, Scheduler, stepExtenderUp, "at extender 2.0.0 and the legacy one at 1.0.0", func(o Observation) string {
		return agreedAt(o, map[string][]string{Extender: {"extender 2.0.0"}, LegacyExtender: {"extender 1.0.0"}})
	})

	// What the processes counted.
	byName := map[string]Incarnation{}
	for _, inc := range res.Incarnations {
		byName[inc.Component+" "+inc.Version] = inc
	}
	require.Len(t, byName, 9, "two versions of four components and the legacy extender")
	k2 := byName["kubelet v2"].Metrics
	assert.Positive(t, k2.Sum("lockstep_blocked_seconds_count", map[string]string{"contract": "nodestatus"}), "kubelet v2's calls blocked")
	assert.Zero(t, k2.Sum("sample_kubelet_reports_total", map[string]string{"outcome": "failed"}), "and none failed")
	s2 := byName["scheduler v2"].Metrics
	for _, tc := range []struct {
		peer, version string // whom the v2 scheduler called, at which version
	}{{Extender, "1.0.0"}, {Extender, "2.0.0"}, {LegacyExtender, "1.0.0"}, {NodeController, "2.0.0"}} {
		assert.Positive(t, s2.Sum("sample_scheduler_calls_total", map[string]string{"peer": tc.peer, "version": tc.version, "code": "ok"}),
			"scheduler v2 called %s at %s", tc.peer, tc.version)
	}
	assert.Zero(t, s2.Sum("sample_scheduler_calls_total", map[string]string{"peer": Extender, "code": "!ok", "version": "!"}), "none failed")
	e2 := byName["extender v2"].Metrics
	assert.Positive(t, e2.Sum("sample_extender_requests_total", map[string]string{"protocol": "lockstep", "version": "2.0.0"}))
	legacy := byName["legacy-extender v1"].Metrics
	assert.Positive(t, legacy.Sum("sample_extender_requests_total", map[string]string{"protocol": "plain", "outcome": "ok"}))
	assert.Zero(t, legacy.Sum("sample_extender_requests_total", map[string]string{"outcome": "error"}))
	nc2 := byName["nodecontroller v2"].Metrics
	assert.Equal(t, 5.0, nc2.Sum("lockstep_sessions", map[string]string{"contract": "nodestatus", "version": "2.0.0"}), "one session per node")
	assert.Equal(t, 5.0, nc2.Sum("sample_nodecontroller_nodes", nil))
}

// contextBeforeDeadline is a context that ends 15 s before the test
// binary's deadline, or after fallback when it has none (go test -timeout 0).
func contextBeforeDeadline(t *testing.T, fallback time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), deadline.Add(-15*time.Second))
	}
	return context.WithTimeout(context.Background(), fallback)
}
