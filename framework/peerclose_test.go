package framework_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A server process killed with SIGKILL is noticed from its connections'
// close, not by heartbeats: the server beats once a minute (TTL three
// minutes), so only the closed connection and the refused probe can take
// the endpoint out of routing within seconds.
func TestKilledServerProcessIsNoticedFromItsConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), serverChildEnv+"="+addr, serverChildHeartbeatEnv+"=1m")
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	cl := benchClient(t, "1.0.0", []string{"http://" + addr})
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))
	// One call, so the client holds a pooled connection, as a busy one does.
	_, err = report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	require.NoError(t, cl.Ready())

	killed := time.Now()
	require.NoError(t, child.Process.Kill())
	require.Eventually(t, func() bool { return cl.Ready() != nil }, 10*time.Second, time.Millisecond,
		"the client still routes to a server killed %v ago, long before its first heartbeat", time.Since(killed))
	t.Logf("noticed %v after the kill", time.Since(killed))
}
