package framework_test

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

func TestKilledClientProcessIsReportedLostWithinTTLPlusAHeartbeat(t *testing.T) {
	const ttl, heartbeat = 800 * time.Millisecond, 200 * time.Millisecond
	joined := make(chan framework.SessionInfo, 1)
	lost := make(chan framework.SessionInfo, 1)
	srv := startBench(t, "127.0.0.1:0", "1.0.0", func(c *framework.ServerConfig) {
		c.SessionTTL, c.Heartbeat = ttl, heartbeat
		c.OnPeerJoined = func(s framework.SessionInfo) { joined <- s }
		c.OnPeerLost = func(s framework.SessionInfo) { lost <- s }
	})

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

	// Heartbeats keep the idle child's session for longer than a TTL: wait
	// until it has lived two TTLs, which without a renewal it could not.
	require.Eventually(t, func() bool {
		for _, s := range srv.Server.Sessions() {
			if s.Peer.Instance == "child-process" && s.Age >= 2*ttl {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "the child's session outlives two TTLs")
	select {
	case l := <-lost:
		t.Fatalf("a live child process was reported lost: %+v", l)
	default:
	}

	require.NoError(t, child.Process.Kill()) // SIGKILL: no goodbye
	killedAt := time.Now()
	select {
	case l := <-lost:
		took := time.Since(killedAt)
		assert.Equal(t, "child-process", l.Peer.Instance)
		// The bound: TTL plus one heartbeat interval, plus the expiry scan
		// (every half heartbeat) and scheduling slack.
		assert.Less(t, took, ttl+heartbeat+heartbeat/2+150*time.Millisecond, "lost after %v", took)
		t.Logf("killed child reported lost after %v (TTL %v, heartbeat %v)", took, ttl, heartbeat)
	case <-time.After(10 * time.Second):
		t.Fatal("a killed client process was never reported lost")
	}
}
