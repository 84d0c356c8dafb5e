package framework_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// applyChildEnv makes the test binary a nodecontroller process listening
// on the address it names, that prints "applied <key>" for every call it
// applies, before answering.
const applyChildEnv = "LOCKSTEP_TEST_CHILD_APPLY"

func runApplyChild() int {
	c, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 5 * time.Second, Heartbeat: time.Second, Logger: frameworktest.Quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	apply := func(ctx context.Context, _ *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		call := framework.CallFromContext(ctx)
		mu.Lock()
		fmt.Println("applied", call.Header.Get(protocol.HeaderIdempotencyKey))
		mu.Unlock()
		// The effect is applied; the answer takes a moment more, so that a
		// kill often falls between the two, the case exactly-once is for.
		time.Sleep(2 * time.Millisecond) // widens the window between applying and answering
		return &benchmsg.Ack{Accepted: true}, nil
	}
	framework.HandleUnary(srv, c, "ReportStatus", apply)
	framework.HandleBatch(srv, c, "ReportStatuses", apply)
	l, err := net.Listen("tcp", os.Getenv(applyChildEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	go func() { time.Sleep(2 * time.Minute); os.Exit(3) }() // a bound in case nobody kills it
	if err := srv.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// applyChild is a running child nodecontroller and the keys it applied.
type applyChild struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	applied map[string]int
	done    chan struct{} // closed once its output ends
}

func startApplyChild(t *testing.T, addr string) *applyChild {
	t.Helper()
	ch := &applyChild{applied: map[string]int{}, done: make(chan struct{})}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^$")
	ch.cmd.Env = append(os.Environ(), applyChildEnv+"="+addr)
	ch.cmd.Stderr = os.Stderr
	stdout, err := ch.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, ch.cmd.Start())
	t.Cleanup(func() { _ = ch.cmd.Process.Kill(); <-ch.done; _ = ch.cmd.Wait() })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	go func() {
		defer close(ch.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if key, ok := strings.CutPrefix(sc.Text(), "applied "); ok {
				ch.mu.Lock()
				ch.applied[key]++
				ch.mu.Unlock()
			}
		}
	}()
	return ch
}

// kill9 kills the child with SIGKILL and waits until all it printed is read.
func (ch *applyChild) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, ch.cmd.Process.Kill())
	<-ch.done
}

// A server process killed with SIGKILL in the middle of keyed calls, and a
// new one started at its address: no key is applied twice, every call the
// client reported successful was applied, and every call whose fate the
// kill left unknown is returned with unknown.
func TestKilledServerProcessWithExactlyOnce(t *testing.T) {
	// Parallel: its server processes, client and counts are its own.
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	first := startApplyChild(t, addr)

	cl := benchClient(t, "1.0.0", []string{"http://" + addr}, func(c *framework.ClientConfig) { c.ExactlyOnce = true })
	require.NoError(t, cl.WaitReady(timeout(t, 10*time.Second)))

	const callers, perCaller = 16, 40
	type outcome struct {
		key string
		err error
	}
	outcomes := make(chan outcome, callers*perCaller)
	var started sync.WaitGroup
	var wg sync.WaitGroup
	ctx := timeout(t, 60*time.Second)
	progress := make(chan struct{}, callers*perCaller)
	for c := range callers {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			for i := range perCaller {
				key := "c" + strconv.Itoa(c) + "-" + strconv.Itoa(i)
				_, err := report(ctx, cl, i, framework.WithIdempotencyKey(key))
				outcomes <- outcome{key, err}
				progress <- struct{}{}
			}
		}()
	}
	started.Wait()
	// Kill the first process once a quarter of the calls are answered,
	// with the rest in flight, and start another at the same address.
	for range callers * perCaller / 4 {
		<-progress
	}
	first.kill9(t)
	second := startApplyChild(t, addr)
	wg.Wait()
	close(outcomes)
	// Every call has its answer, but the successor's "applied" lines may
	// still be on their way through its pipe: stop it and read them all
	// before counting.
	second.kill9(t)

	applied := map[string]int{}
	for _, ch := range []*applyChild{first, second} {
		ch.mu.Lock()
		for k, n := range ch.applied {
			applied[k] += n
		}
		ch.mu.Unlock()
	}
	var ok, unknown int
	for o := range outcomes {
		switch {
		case o.err == nil:
			ok++
			assert.Equal(t, 1, applied[o.key], "call %s was reported successful", o.key)
		case framework.CodeOf(o.err) == framework.CodeUnknown:
			unknown++
			assert.LessOrEqual(t, applied[o.key], 1, "call %s was applied twice", o.key)
		default:
			t.Errorf("call %s failed with neither success nor unknown: %v", o.key, o.err)
		}
	}
	for k, n := range applied {
		assert.LessOrEqual(t, n, 1, "key %s applied %d times", k, n)
	}
	second.mu.Lock()
	afterKill := len(second.applied)
	second.mu.Unlock()
	t.Logf("%d calls: %d successful, %d unknown; %d applied by the killed process, %d by its successor",
		callers*perCaller, ok, unknown, len(first.applied), afterKill)
	assert.Equal(t, callers*perCaller, ok+unknown)
	assert.Positive(t, afterKill, "calls after the kill reached the new process")
}
