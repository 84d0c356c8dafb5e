package framework_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// TestKilledClientProcessIsReportedLostWithinTTLPlusAHeartbeat: a client
// process killed without a word is reported lost once its session was
// idle for a TTL, and within a TTL, a heartbeat interval and a scan of the
// kill. The server runs on a fake clock whose expiry scans the test runs
// one at a time (see scanClock), so both are measured on the server's
// clock, whatever the machine's load; the child heartbeats on real time.
func TestKilledClientProcessIsReportedLostWithinTTLPlusAHeartbeat(t *testing.T) {
	const ttl, heartbeat = 800 * time.Millisecond, 200 * time.Millisecond
	clock := newScanClock(heartbeat / 2) // the expiry loop scans every half heartbeat
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped) })
	joined := make(chan framework.SessionInfo, 1)
	lost := make(chan framework.SessionInfo, 1)
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat, c.Clock = ttl, heartbeat, clock
		c.OnPeerJoined = func(s framework.SessionInfo) { joined <- s }
		c.OnPeerLost = func(s framework.SessionInfo) { lost <- s }
	})
	t.Cleanup(func() { go runClock(clock.FakeClock, stopped) }) // the server's drain waits on its clock

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+srv.URL)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	j := <-joined
	assert.Equal(t, "child-process", j.Peer.Instance)
	renewedNow := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			for _, s := range srv.Server.Sessions() {
				if s.Peer.Instance == "child-process" && s.Idle == 0 {
					return true
				}
			}
			return false
		}, 10*time.Second, 2*time.Millisecond, msg)
	}

	// Heartbeats keep the idle child's session for two TTLs of the
	// server's clock, which without a renewal it could not outlive: each
	// step waits until a heartbeat renewed it at the current instant, then
	// moves the clock on by an interval and scans.
	for step := range int(2 * ttl / heartbeat) {
		renewedNow(fmt.Sprintf("no heartbeat renewed the child's session at step %d", step))
		clock.Advance(heartbeat)
		clock.scan(t)
		select {
		case l := <-lost:
			t.Fatalf("a live child process was reported lost at step %d: %+v", step, l)
		default:
		}
	}
	renewedNow("no heartbeat renewed the child's session after two TTLs")
	for _, s := range srv.Server.Sessions() {
		assert.GreaterOrEqual(t, s.Age, 2*ttl, "the child's session outlived two TTLs")
	}

	// Killed right after a renewal, so no heartbeat is on its way.
	require.NoError(t, child.Process.Kill()) // SIGKILL: no goodbye
	killedAt := clock.Now()
	var got *framework.SessionInfo
	for got == nil {
		clock.Advance(heartbeat / 2)
		clock.scan(t)
		select {
		case l := <-lost:
			got = &l
		default:
			require.Less(t, clock.Since(killedAt), ttl+heartbeat+heartbeat/2,
				"a killed client process was not reported lost within its TTL, a heartbeat interval and a scan")
		}
	}
	assert.Equal(t, "child-process", got.Peer.Instance)
	assert.GreaterOrEqual(t, got.Idle, ttl, "reported lost only once idle for its TTL")
	t.Logf("killed child reported lost %v after the kill on the server's clock (TTL %v, heartbeat %v)",
		clock.Since(killedAt), ttl, heartbeat)
}
