package framework_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// freeLoopbackAddr returns a loopback address nothing listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// startServerProcess starts the test binary as a nodecontroller process
// serving at addr with the given heartbeat (TTL three of them), and
// returns once it listens.
func startServerProcess(t *testing.T, addr string, heartbeat time.Duration) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), serverChildEnv+"="+addr, serverChildHeartbeatEnv+"="+heartbeat.String())
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return child
}

// A server process killed with SIGKILL is noticed from its connections'
// close, not by heartbeats: the server beats once a minute (TTL three
// minutes), so only the closed connection and the refused check of the
// address can take the endpoint out of routing. A new process at the same
// address is then handshaken as soon as it listens.
func TestKilledServerProcessIsNoticedFromItsConnectionsAndItsReplacementFound(t *testing.T) {
	addr := freeLoopbackAddr(t)
	url := "http://" + addr
	child := startServerProcess(t, addr, time.Minute)

	cl := benchClient(t, "1.0.0", []string{url})
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))
	// One call, so the client holds a pooled connection, as a busy one does.
	_, err := report(timeout(t, 10*time.Second), cl, 1)
	require.NoError(t, err)
	require.NoError(t, cl.Ready())
	_, checksBefore, crashesBefore := framework.ProbeStats(url)

	killed := time.Now()
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.Eventually(t, func() bool { return cl.Ready() != nil }, 10*time.Second, time.Millisecond,
		"the client still routes to a killed server, and its first heartbeat is a minute away")
	t.Logf("noticed %v after the kill", time.Since(killed))
	// The close started a check of the address; it found nothing
	// listening, or (a listener not yet torn down) asked for a heartbeat
	// at once, whose connection was refused.
	_, checks, crashes := framework.ProbeStats(url)
	assert.Greater(t, checks, checksBefore, "the connection's close started a check")
	t.Logf("checks %d, found nothing listening %d", checks-checksBefore, crashes-crashesBefore)
	assert.Contains(t, []string{"unreachable", "connecting"}, endpointState(cl, url))

	startServerProcess(t, addr, time.Minute)
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)), "the replacement at the same address was found")
	_, err = report(timeout(t, 10*time.Second), cl, 2)
	require.NoError(t, err)
}

// A server that drains says so (draining heartbeat answers, Connection:
// close), and the connections it then closes start no check of its
// address: its sessions are handed over by the drain, not lost as a
// crash's. The client's transport cannot drop its idle connections (a
// wrapper without CloseIdleConnections), so its pool still holds
// connections when the server closes them at the end of the drain. The
// same address restarted in place is handshaken again.
func TestDrainedServerIsNotTakenForACrash(t *testing.T) {
	addr := freeLoopbackAddr(t)
	url := "http://" + addr
	srv := startBench(t, addr, "1.0.0")
	wrapped := &cuttable{next: framework.NewTransport(nil)}
	cl := benchClient(t, "1.0.0", []string{url}, func(c *framework.ClientConfig) { c.Transport = wrapped })
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))
	// Concurrent calls, so the pool holds several connections.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := report(timeout(t, 10*time.Second), cl, i)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	_, checksBefore, crashesBefore := framework.ProbeStats(url)

	drained := srv.startDrain(t, 10*time.Second)
	require.Eventually(t, func() bool { return endpointState(cl, url) == "draining" }, 10*time.Second, time.Millisecond,
		"the client heard the drain")
	select {
	case err := <-drained:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not end")
	}
	// The handshake after the drain is refused: the connections are all
	// closed by then.
	require.Eventually(t, func() bool { return endpointState(cl, url) == "unreachable" }, 10*time.Second, time.Millisecond)
	_, checks, crashes := framework.ProbeStats(url)
	assert.Equal(t, checksBefore, checks, "a connection the draining server closed started a check")
	assert.Equal(t, crashesBefore, crashes)

	startBench(t, addr, "1.0.0")
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)), "the new server at the same address was found")
	_, err := report(timeout(t, 10*time.Second), cl, 2)
	require.NoError(t, err)
}

// While nothing listens at an address, the clients of a process that wait
// for it do not redial it on their own backoff: the address's one prober
// dials it. In the time the prober dialled twenty times, twenty clients
// sent no handshake; each would have sent several on its own backoff. When
// a server listens there, every client handshakes.
func TestClientsOfAProcessWaitForADarkAddressOnOneProber(t *testing.T) {
	addr := freeLoopbackAddr(t)
	url := "http://" + addr
	const clients = 20
	counter := &cuttable{next: framework.NewTransport(nil)}
	var cls []*framework.Client
	for range clients {
		cls = append(cls, benchClient(t, "1.0.0", []string{url}, func(c *framework.ClientConfig) { c.Transport = counter }))
	}
	require.Eventually(t, func() bool {
		for _, cl := range cls {
			if endpointState(cl, url) != "unreachable" {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
	// Every client has failed its first handshake and waits; count from
	// the moment the prober has dialled once more.
	dials0, _, _ := framework.ProbeStats(url)
	require.Eventually(t, func() bool { d, _, _ := framework.ProbeStats(url); return d > dials0 }, 10*time.Second, time.Millisecond)
	handshakes := counter.count("/lockstep/handshake")
	dials1, _, _ := framework.ProbeStats(url)
	require.Eventually(t, func() bool { d, _, _ := framework.ProbeStats(url); return d >= dials1+20 }, 30*time.Second, time.Millisecond)
	assert.Equal(t, handshakes, counter.count("/lockstep/handshake"), "clients redialled a dark address on their own")

	startBench(t, addr, "1.0.0")
	for _, cl := range cls {
		require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))
	}
}
