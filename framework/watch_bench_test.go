package framework_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// The fan-out benchmarks run one scenario, whatever b.N is: setting up a
// thousand watchers is the expensive part, and the figures that matter are
// latencies and rates, reported with b.ReportMetric. Run them with
// -benchtime=1x:
//
//	go test -run '^$' -bench 'Watch' -benchtime=1x ./framework/

// fanoutScenario is one fan-out run: a writer at a fixed rate over a set of
// keys, and watchers that decode every frame into Go types.
type fanoutScenario[T any] struct {
	topic    string
	keys     int
	watchers int
	clients  int // the watchers are spread over this many clients (sessions)
	rate     int // writes per second
	duration time.Duration
	object   func(key int, stamp int64) *T
	stamp    func(*T) int64
}

// fanoutResult is what a fan-out run measured.
type fanoutResult struct {
	writes     int
	writeRate  float64       // writes per second achieved
	latencies  []int64       // delivery latency of every delivered object, ns, sorted
	converged  time.Duration // from the last write until every watcher held every key's final version
	deliveries int64
	cpu        time.Duration // process CPU during the writes and convergence
	wall       time.Duration
	setP99     time.Duration // how long the writer's Set took, p99
}

func (r fanoutResult) percentile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies))*q+0.999999) - 1
	return time.Duration(r.latencies[min(max(i, 0), len(r.latencies)-1)])
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runFanout[T any](b *testing.B, sc fanoutScenario[T]) fanoutResult {
	b.Helper()
	c := topicContract(b, "1.0.0")
	var writer *framework.TopicWriter[T]
	srv := frameworktest.StartServer(b, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		MaxSessions: 10 * sc.clients}, func(s *framework.Server) {
		writer = framework.ServeTopic[T](s, c, sc.topic, framework.WithMaxWatchers(sc.watchers+10), framework.WithMaxWatchersPerPeer(sc.watchers+10))
		framework.ServeOtherTopics(s, c)
	})
	for k := range sc.keys {
		if err := writer.Set(sc.object(k, time.Now().UnixNano())); err != nil {
			b.Fatal(err)
		}
	}
	tr := framework.NewTransport(nil)
	b.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	type watcher struct {
		inf          *framework.Informer[T]
		latencies    []int64
		deliveries   atomic.Int64
		lastDelivery atomic.Int64
	}
	watchers := make([]*watcher, sc.watchers)
	var recording atomic.Bool
	perClient := (sc.watchers + sc.clients - 1) / sc.clients
	var cl *framework.Client
	for i := range sc.watchers {
		if i%perClient == 0 {
			cl = frameworktest.NewClient(b, c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Endpoints: []string{srv.URL}, Transport: tr})
		}
		w := &watcher{latencies: make([]int64, 0, 1024)}
		record := func(obj *T) {
			now := time.Now().UnixNano()
			if recording.Load() {
				// Only the informer's goroutine appends: no lock needed.
				w.latencies = append(w.latencies, now-sc.stamp(obj))
				w.deliveries.Add(1)
				w.lastDelivery.Store(now)
			}
		}
		inf, err := framework.Watch(ctx, cl, sc.topic, framework.InformerHandlers[T]{
			OnAdd:    func(_ string, obj *T) { record(obj) },
			OnUpdate: func(_ string, _, obj *T) { record(obj) },
		})
		if err != nil {
			b.Fatal(err)
		}
		w.inf = inf
		watchers[i] = w
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 60*time.Second)
	defer syncCancel()
	for _, w := range watchers {
		if err := w.inf.WaitForSync(syncCtx); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, w := range watchers {
			w.inf.Stop()
		}
	})
	runtime.GC()

	recording.Store(true)
	b.ResetTimer()
	cpu0, start := processCPU(), time.Now()
	total := int(sc.duration.Seconds() * float64(sc.rate))
	// The writer is paced by a ticker, 100 times a second, writing each
	// time what is due by then: its rate does not depend on sleeping
	// precisely, and a writer that got the CPU late catches up.
	tick := time.NewTicker(10 * time.Millisecond)
	written := 0
	setTimes := make([]int64, 0, total)
	for written < total {
		<-tick.C
		due := min(int(time.Since(start).Seconds()*float64(sc.rate)), total)
		for written < due {
			t0 := time.Now()
			if err := writer.Set(sc.object(written%sc.keys, time.Now().UnixNano())); err != nil {
				b.Fatal(err)
			}
			setTimes = append(setTimes, int64(time.Since(t0)))
			written++
		}
	}
	tick.Stop()
	lastWrite := time.Now()
	writeTime := lastWrite.Sub(start)

	final := make([]framework.ObjectVersion, sc.keys)
	keyNames := writer.Keys()
	for i, k := range keyNames {
		final[i], _ = writer.Version(k)
	}
	convergedAll := func() bool {
		for _, w := range watchers {
			for i, k := range keyNames {
				if v, _ := w.inf.Version(k); v != final[i] {
					return false
				}
			}
		}
		return true
	}
	require.Eventually(b, convergedAll, 60*time.Second, 10*time.Millisecond, "watchers converge after the last write")
	b.StopTimer()
	cpu := processCPU() - cpu0
	wall := time.Since(start)
	recording.Store(false)

	slices.Sort(setTimes)
	res := fanoutResult{writes: written, writeRate: float64(written) / writeTime.Seconds(), cpu: cpu, wall: wall,
		setP99: time.Duration(setTimes[(len(setTimes)*99+99)/100-1])}
	var lastDelivery int64
	for _, w := range watchers {
		res.latencies = append(res.latencies, w.latencies...)
		res.deliveries += w.deliveries.Load()
		lastDelivery = max(lastDelivery, w.lastDelivery.Load())
	}
	slices.Sort(res.latencies)
	res.converged = max(time.Duration(lastDelivery-lastWrite.UnixNano()), 0)
	return res
}

func reportFanout(b *testing.B, r fanoutResult, watchers int) {
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(r.percentile(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.percentile(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(r.percentile(1).Microseconds())/1000, "max-ms")
	b.ReportMetric(r.writeRate, "writes/s")
	b.ReportMetric(float64(r.setP99.Nanoseconds())/1000, "set-p99-µs")
	b.ReportMetric(float64(r.converged.Microseconds())/1000, "converge-ms")
	b.ReportMetric(float64(r.deliveries)/float64(r.writes*watchers), "handled/write/watcher")
	b.ReportMetric(r.cpu.Seconds()/r.wall.Seconds(), "cpu-cores")
	b.ReportMetric(float64(r.cpu.Microseconds())/float64(r.writes), "cpu-µs/write")
}

func healthObject(key int, stamp int64) *topicmsg.NodeHealth {
	return &topicmsg.NodeHealth{Node: fmt.Sprintf("node-%04d", key), Ready: stamp%2 == 0, Score: stamp % 101,
		Reason: "KubeletReady", Stamp: stamp}
}

func nodeStatusObject(key int, stamp int64) *benchmsg.NodeStatus {
	n := benchmsg.Node(key)
	t := time.Unix(0, stamp)
	n.Conditions[0].LastHeartbeatTime = &t
	return n
}

func nodeStatusStamp(n *benchmsg.NodeStatus) int64 {
	return n.Conditions[0].LastHeartbeatTime.UnixNano()
}

// BenchmarkWatchFanout is target P4: one writer, 100 keys, 1000 watchers
// decoding every object into Go types, 100 writes/s. Its figure is the
// p99 delivery latency (write to handler), wanted ≤ 50 ms. NodeHealth is
// a small object (~100 bytes); NodeStatus is the 1.5 KB benchmark
// message.
func BenchmarkWatchFanout(b *testing.B) {
	b.Run("NodeHealth", func(b *testing.B) {
		r := runFanout(b, fanoutScenario[topicmsg.NodeHealth]{
			topic: topicmsg.TopicNodeHealth, keys: 100, watchers: 1000, clients: 50, rate: 100, duration: 5 * time.Second,
			object: healthObject, stamp: func(h *topicmsg.NodeHealth) int64 { return h.Stamp },
		})
		reportFanout(b, r, 1000)
	})
	b.Run("NodeStatus", func(b *testing.B) {
		r := runFanout(b, fanoutScenario[benchmsg.NodeStatus]{
			topic: topicmsg.TopicNodeStatus, keys: 100, watchers: 1000, clients: 50, rate: 100, duration: 5 * time.Second,
			object: nodeStatusObject, stamp: nodeStatusStamp,
		})
		reportFanout(b, r, 1000)
	})
}

// BenchmarkWatchOverload is target P5: the same fan-out at 1000 writes/s,
// more than the watchers can take one by one. The writer must hold its
// rate (writes/s), what watchers are handed must be fresh (p99-ms is the
// staleness of each delivered object), and every watcher must hold the
// final state of every key within a second of the last write
// (converge-ms).
func BenchmarkWatchOverload(b *testing.B) {
	b.Run("NodeHealth", func(b *testing.B) {
		r := runFanout(b, fanoutScenario[topicmsg.NodeHealth]{
			topic: topicmsg.TopicNodeHealth, keys: 100, watchers: 1000, clients: 50, rate: 1000, duration: 3 * time.Second,
			object: healthObject, stamp: func(h *topicmsg.NodeHealth) int64 { return h.Stamp },
		})
		reportFanout(b, r, 1000)
	})
	b.Run("NodeStatus", func(b *testing.B) {
		r := runFanout(b, fanoutScenario[benchmsg.NodeStatus]{
			topic: topicmsg.TopicNodeStatus, keys: 100, watchers: 1000, clients: 50, rate: 1000, duration: 3 * time.Second,
			object: nodeStatusObject, stamp: nodeStatusStamp,
		})
		reportFanout(b, r, 1000)
	})
}

// BenchmarkWatchIdleMemory is target P7's watcher half: what one idle
// watch stream costs the server, measured at 10,000 streams (≤ 16 KiB
// wanted). The streams are held by a process of their own
// (internal/topicmsg/idlewatchers), so the figure is the server's alone:
// live heap plus goroutine stacks, after collecting garbage, divided by the
// number of streams.
func BenchmarkWatchIdleMemory(b *testing.B) {
	const watchers, keys = 10000, 100
	bin := buildIdleWatchers(b)
	c := topicContract(b, "1.0.0")
	var writer *framework.TopicWriter[topicmsg.NodeHealth]
	// All the streams ride one session: the per-session and per-peer
	// watcher limits are raised to fit them.
	srv := frameworktest.StartServer(b, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 10 * time.Minute, Heartbeat: time.Minute,
		Limits: framework.Limits{WatchersPerSession: watchers, WatchersPerPeer: watchers}}, func(s *framework.Server) {
		writer = framework.ServeTopic[topicmsg.NodeHealth](s, c, topicmsg.TopicNodeHealth, framework.WithMaxWatchers(watchers), framework.WithMaxWatchersPerPeer(watchers))
		framework.ServeOtherTopics(s, c)
	})
	for k := range keys {
		if err := writer.Set(healthObject(k, int64(k))); err != nil {
			b.Fatal(err)
		}
	}
	token := rawHandshake(b, srv.URL, c, "idle-watchers")
	before := liveMemory()

	cmd := exec.Command(bin, "-addr", srv.Addr, "-token", token, "-n", fmt.Sprint(watchers),
		"-path", protocol.WatchPath(c.Name(), c.Version(), topicmsg.TopicNodeHealth))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != fmt.Sprintf("ready %d", watchers) {
		b.Fatalf("idlewatchers: %q %v", line, err)
	}
	// Let every stream's flush end, so only what an idle stream keeps
	// remains.
	time.Sleep(200 * time.Millisecond) // real time: nothing reports when every stream's flush goroutine has ended
	after := liveMemory()
	streams := 0
	for _, st := range srv.Server.TopicStats() {
		streams += len(st.Watchers)
	}
	if streams != watchers {
		b.Fatalf("the server holds %d streams, not %d", streams, watchers)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric((float64(after.total())-float64(before.total()))/watchers, "B/watcher")
	b.ReportMetric((float64(after.heap)-float64(before.heap))/watchers, "heap-B/watcher")
	b.ReportMetric((float64(after.stacks)-float64(before.stacks))/watchers, "stack-B/watcher")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/watchers, "goroutines/watcher")
}

type memory struct {
	heap, stacks uint64
	goroutines   int
}

func (m memory) total() uint64 { return m.heap + m.stacks }

func liveMemory() memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{heap: ms.HeapAlloc, stacks: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// buildIdleWatchers builds the idlewatchers command into a temporary
// directory.
func buildIdleWatchers(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "idlewatchers")
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Fatalf("building idlewatchers needs the go command on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "build", "-o", bin,
		"github.com/lockstep-dev/lockstep/framework/internal/topicmsg/idlewatchers").CombinedOutput()
	if err != nil {
		b.Fatalf("building idlewatchers: %v\n%s", err, out)
	}
	return bin
}
