package framework_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
)

// logLines is a slog destination tests read while the client writes.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// matching returns the lines that contain s.
func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// A call blocked by a version mismatch says so in the log once it has
// waited a second, naming who refused, why, and what each side offers, and
// then at most once per 30 s, however many calls wait.
func TestBlockedCallIsLoggedThenRateLimited(t *testing.T) {
	srv := startBench(t, "127.0.0.1:0", "2.0.0")
	clock := clockwork.NewFakeClock()
	logs := &logLines{}
	cl := benchClient(t, "1.0.0", []string{srv.URL}, func(c *framework.ClientConfig) {
		c.Clock = clock
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
		// The refused endpoint tries again only after an hour: its timer
		// waits on the clock throughout the test, beside one log timer
		// per blocked call, so settled can count them.
		c.Backoff = framework.Backoff{Base: time.Hour, Max: time.Hour, Jitter: -1}
	})
	endpointStateEventually(t, cl, srv.URL, "refused")
	const msg = "waiting for a compatible peer"

	ctx, cancel := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	defer func() { cancel(); calls.Wait() }()
	call := func() {
		calls.Add(1)
		go func() {
			defer calls.Done()
			_, _ = report(ctx, cl, 1)
		}()
	}
	blocked := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return cl.Status().Blocked == n }, 10*time.Second, time.Millisecond, "%d calls blocked", n)
	}
	// settled waits until the endpoint's timer and the log timers of n
	// blocked calls all wait on the clock again: a call whose timer an
	// Advance fired has written its line, if it was due, and re-armed its
	// timer. Only then may a test say that nothing was logged.
	settled := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, clock.BlockUntilContext(ctx, 1+n), "the endpoint's timer and %d calls' log timers wait on the clock", n)
	}
	lines := func(n int) []string {
		t.Helper()
		require.Eventually(t, func() bool { return len(logs.matching(msg)) >= n }, 10*time.Second, time.Millisecond, "%d log lines", n)
		return logs.matching(msg)
	}

	call()
	blocked(1)
	settled(1)
	clock.Advance(999 * time.Millisecond)
	settled(1)
	assert.Empty(t, logs.matching(msg), "a wait shorter than a second (a start-up's first handshake) is not logged")
	clock.Advance(time.Millisecond)
	got := lines(1)
	require.Len(t, got, 1)
	for _, want := range []string{
		`level=WARN`, `waiting="call bench ReportStatus"`, `for=1s`, `contract=bench`, `server=nodecontroller`, `offered=1.0.0`, `blocked=1`,
		srv.URL + ` refused (version_mismatch): nodecontroller speaks bench 2.0.0; kubelet offers 1.0.0`,
	} {
		assert.Contains(t, got[0], want)
	}

	// A second call waits too: its own first line is due at 2 s, inside
	// the client's 30 s, so it is not written; nor is anything before 31 s.
	call()
	blocked(2)
	settled(2)
	clock.Advance(time.Second)
	settled(2)
	assert.Len(t, logs.matching(msg), 1, "the second call's first line, due at 2 s, is within 30 s of the first call's")
	clock.Advance(29*time.Second - time.Millisecond)
	settled(2)
	assert.Len(t, logs.matching(msg), 1, "within 30 s of the last line, nothing more is logged, whichever call waits")
	clock.Advance(time.Millisecond)
	got = lines(2)
	assert.Contains(t, got[1], `blocked=2`)
	assert.Contains(t, got[1], `longestBlocked=31s`)
	settled(2)
	clock.Advance(30*time.Second - time.Millisecond)
	settled(2)
	assert.Len(t, logs.matching(msg), 2, "the second call's reminder at 32 s is rate-limited as well")
}

// A watch blocked by a version mismatch is logged the same way, naming
// the topic it waits to watch.
func TestBlockedWatchIsLogged(t *testing.T) {
	ts := startTopicServer(t, "127.0.0.1:0", "2.0.0", topicServerOpts{})
	clock := clockwork.NewFakeClock()
	logs := &logLines{}
	cl := topicClient(t, "1.0.0", []string{ts.URL}, func(c *framework.ClientConfig) {
		c.Clock = clock
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	endpointStateEventually(t, cl, ts.URL, "refused")
	inf, err := framework.Watch[topicmsg.NodeHealth](context.Background(), cl, topicmsg.TopicNodeHealth, framework.InformerHandlers[topicmsg.NodeHealth]{})
	require.NoError(t, err)
	defer inf.Stop()
	// The watch's wait starts on its own goroutine: the clock moves on
	// until its line comes.
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		return len(logs.matching(`waiting="watch NodeHealth"`)) > 0
	}, 10*time.Second, 5*time.Millisecond)
	line := logs.matching(`waiting="watch NodeHealth"`)[0]
	assert.Contains(t, line, `msg="lockstep: waiting for a compatible peer"`)
	assert.Contains(t, line, ts.URL+` refused (version_mismatch): nodecontroller speaks topics 2.0.0; kubelet offers 1.0.0`)
}
