package framework_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// resumeScenario is one mass reconnect: a topic of keys benchmark
// NodeStatus objects, watchers raw streams spread over sessions, every
// connection cut once, changed keys written while they are down, and every
// watcher reopening its stream, with its resume point or without.
type resumeScenario struct {
	keys, watchers, sessions int
	changed                  int  // keys written while the watchers are cut off
	resume                   bool // reopen with the resume point (false: as before revisions, a snapshot)
}

// resumeResult is what the reopened streams carried, summed over the
// watchers, through their synced frame.
type resumeResult struct {
	snapshotBytes int64 // what the first streams' snapshots carried, for scale
	bytes, frames int64
	resumed       int           // streams whose synced frame said resumed
	syncTime      time.Duration // from reopening until every watcher was synced again
}

// syncedFrame is the part of a synced frame a raw watcher reads.
type syncedFrame struct {
	Type    string `json:"type"`
	History string `json:"history"`
	Rev     uint64 `json:"rev"`
	Resumed bool   `json:"resumed"`
}

// rawWatcher reads a watch stream counting frames and bytes, without
// decoding objects: a thousand decoded caches of 5,000 objects would not
// fit in memory. It keeps the resume point the protocol gives it: the
// synced frame's history and revision, then the revision of each change.
type rawWatcher struct {
	hc        *http.Client
	url       string
	token     string
	history   string
	rev       uint64
	snapBytes int64
	bytes     int64
	frames    int64
	resumed   bool
}

var revField = []byte(`"rev":`)

// frameRevision reads the rev field of a set or delete frame.
func frameRevision(line []byte) (uint64, bool) {
	i := bytes.Index(line, revField)
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(revField):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	rev, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	return rev, err == nil
}

// stream reads one stream. The first (reopen false) runs until the
// connection ends, calling onSynced at its synced frame; the reopened one
// counts what arrives through its synced frame and returns there.
func (w *rawWatcher) stream(ctx context.Context, reopen, resume bool, onSynced func()) error {
	url := w.url
	if reopen && resume && w.history != "" {
		url += "?since=" + w.history + "." + strconv.FormatUint(w.rev, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set(protocol.HeaderSession, w.token)
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("watch answered %s: %s", resp.Status, body)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	synced := false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !synced {
			w.snapBytesOrBytes(reopen, len(line))
		}
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"synced"`)):
			var f syncedFrame
			if err := json.Unmarshal(line, &f); err != nil {
				return err
			}
			w.history, w.rev, w.resumed, synced = f.History, f.Rev, f.Resumed, true
			onSynced()
			if reopen {
				return nil
			}
		case synced && (bytes.HasPrefix(line, []byte(`{"type":"set"`)) || bytes.HasPrefix(line, []byte(`{"type":"delete"`))):
			if rev, ok := frameRevision(line); ok {
				w.rev = max(w.rev, rev)
			}
		}
	}
}

func (w *rawWatcher) snapBytesOrBytes(reopen bool, n int) {
	if reopen {
		w.bytes += int64(n)
		w.frames++
	} else {
		w.snapBytes += int64(n)
	}
}

func runResumeScenario(tb testing.TB, sc resumeScenario) resumeResult {
	tb.Helper()
	c := topicContract(tb, "1.0.0")
	var writer *framework.TopicWriter[benchmsg.NodeStatus]
	// Sessions live long: a thousand snapshots of 7.5 MB on a loaded
	// 2-core machine can keep a heartbeat waiting for the CPU for many
	// seconds, and the figures are bytes and frames, not session upkeep.
	srv := frameworktest.StartServer(tb, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 5 * time.Minute, Heartbeat: 10 * time.Second}, func(s *framework.Server) {
		writer = framework.ServeTopic[benchmsg.NodeStatus](s, c, topicmsg.TopicNodeStatus,
			framework.WithMaxWatchers(4*sc.watchers+10), framework.WithMaxWatchersPerPeer(4*sc.watchers+10))
		framework.ServeOtherTopics(s, c)
	})
	for k := range sc.keys {
		if err := writer.Set(nodeStatusObject(k, int64(k))); err != nil {
			tb.Fatal(err)
		}
	}
	tokens := make([]string, sc.sessions)
	for n := range tokens {
		tokens[n] = rawHandshake(tb, srv.URL, c, fmt.Sprintf("watcher-process-%d", n))
	}
	renewSessions(tb, srv.URL, tokens, 10*time.Second)

	ct := newCutTransport(tb, 0)
	hc := &http.Client{Transport: ct}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	watchURL := srv.URL + protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicNodeStatus)
	watchers := make([]*rawWatcher, sc.watchers)
	var synced, ended, resynced sync.WaitGroup
	synced.Add(sc.watchers)
	ended.Add(sc.watchers)
	resynced.Add(sc.watchers)
	gate := make(chan struct{})
	var failures atomic.Int64
	var firstErr atomic.Value
	for i := range watchers {
		w := &rawWatcher{hc: hc, url: watchURL, token: tokens[i%len(tokens)]}
		watchers[i] = w
		go func() {
			_ = w.stream(ctx, false, sc.resume, synced.Done)
			ended.Done()
			select {
			case <-gate:
			case <-ctx.Done():
				resynced.Done()
				return
			}
			if err := w.stream(ctx, true, sc.resume, resynced.Done); err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
				resynced.Done()
			}
		}()
	}
	waitGroup(tb, ctx, &synced, "every watcher synced")
	if n := ct.cut(); n < sc.watchers {
		tb.Fatalf("cut %d connections, want at least %d", n, sc.watchers)
	}
	waitGroup(tb, ctx, &ended, "every stream ended")
	for k := range sc.changed {
		key := k * (sc.keys / max(sc.changed, 1)) // spread over the topic
		if err := writer.Set(nodeStatusObject(key, int64(sc.keys+k))); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Now()
	close(gate)
	waitGroup(tb, ctx, &resynced, "every watcher synced again")
	res := resumeResult{syncTime: time.Since(start)}
	if n := failures.Load(); n > 0 {
		tb.Fatalf("%d reopened streams failed: %v", n, firstErr.Load())
	}
	for _, w := range watchers {
		res.snapshotBytes += w.snapBytes
		res.bytes += w.bytes
		res.frames += w.frames
		if w.resumed {
			res.resumed++
		}
	}
	return res
}

func waitGroup(tb testing.TB, ctx context.Context, wg *sync.WaitGroup, what string) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		tb.Fatalf("not %s: %v", what, ctx.Err())
	}
}

// renewSessions keeps sessions opened by hand alive, in one heartbeat
// request for all of them, until the test ends.
func renewSessions(tb testing.TB, url string, tokens []string, every time.Duration) {
	body, _ := json.Marshal(map[string][]string{"sessions": tokens})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			resp, err := http.Post(url+protocol.PathHeartbeat, "application/json", bytes.NewReader(body))
			if err == nil {
				_ = resp.Body.Close()
			}
		}
	}()
	tb.Cleanup(func() {
		close(stop)
		<-done
	})
}

// TestWatchResumeSendsOnlyChangedKeys is the make-test size of
// BenchmarkWatchResume: 500 keys, 50 watchers, every connection cut once
// and 1 % of the keys changed meanwhile. Reopened with their resume point,
// the streams carry only the changed keys and a synced frame each, about
// 1 % of a snapshot's bytes; without it, the whole topic again.
func TestWatchResumeSendsOnlyChangedKeys(t *testing.T) {
	const keys, watchers, changed = 500, 50, 5
	sc := resumeScenario{keys: keys, watchers: watchers, sessions: 5, changed: changed, resume: true}
	resumed := runResumeScenario(t, sc)
	sc.resume = false
	relisted := runResumeScenario(t, sc)

	if resumed.resumed != watchers {
		t.Fatalf("%d of %d streams resumed", resumed.resumed, watchers)
	}
	if resumed.frames != watchers*(changed+1) {
		t.Fatalf("resumed streams carried %d frames, want %d: the changed keys and synced, per watcher", resumed.frames, watchers*(changed+1))
	}
	if relisted.resumed != 0 || relisted.frames != watchers*(keys+1) {
		t.Fatalf("streams without a resume point: %d resumed, %d frames; want 0 and %d", relisted.resumed, relisted.frames, watchers*(keys+1))
	}
	ratio := float64(resumed.bytes) / float64(relisted.bytes)
	t.Logf("resume: %d frames, %d bytes; snapshot: %d frames, %d bytes; %.3f %% of the snapshot's bytes",
		resumed.frames, resumed.bytes, relisted.frames, relisted.bytes, 100*ratio)
	// The changed keys are 1 % of the snapshot's set frames; the synced
	// frame each stream ends with adds a little.
	if ratio > 0.0105 {
		t.Fatalf("resume sent %.3f %% of the snapshot's bytes, want at most about 1 %%", 100*ratio)
	}
}

// BenchmarkWatchResume is the mass reconnect of docs/topics.md: 5,000 keys
// of the 1.5 KB benchmark NodeStatus, 1,000 watchers over 50 sessions,
// every connection cut once and 1 % of the keys changed meanwhile; the
// reopened streams with their resume point and without (a snapshot each,
// the behaviour before revisions), in the same run. It runs one scenario
// whatever b.N is: run it with -benchtime=1x.
func BenchmarkWatchResume(b *testing.B) {
	const keys, watchers, changed = 5000, 1000, 50
	var res [2]resumeResult
	for n, resume := range []bool{true, false} {
		res[n] = runResumeScenario(b, resumeScenario{keys: keys, watchers: watchers, sessions: 50, changed: changed, resume: resume})
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(res[0].bytes)/1e6, "resume-MB")
	b.ReportMetric(float64(res[1].bytes)/1e6, "snapshot-MB")
	b.ReportMetric(100*float64(res[0].bytes)/float64(res[1].bytes), "resume-%-of-snapshot")
	b.ReportMetric(float64(res[0].frames), "resume-frames")
	b.ReportMetric(float64(res[1].frames), "snapshot-frames")
	b.ReportMetric(float64(res[0].syncTime.Microseconds())/1000, "resume-sync-ms")
	b.ReportMetric(float64(res[1].syncTime.Microseconds())/1000, "snapshot-sync-ms")
	b.ReportMetric(float64(res[0].resumed), "resumed-streams")
}
