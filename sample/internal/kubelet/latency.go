package kubelet

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Latency is a histogram of durations with fixed, geometric buckets: each
// bound is 1.02 times the one before, from 50 µs to nearly three minutes,
// so a quantile it reports is at most 2 % above the true one (fine enough
// to tell 49 ms from 51 ms, as P9's heartbeat bound of 50 ms needs).
// Recording is two atomic adds: every heartbeat of thousands of simulated
// nodes goes through it, and a lock there would be the process's hottest.
// It holds some 6 KiB.
type Latency struct {
	counts [latencyBuckets]atomic.Int64
	total  atomic.Int64
}

const (
	latencyBuckets = 760
	latencyFirst   = 50 * time.Microsecond
	latencyGrowth  = 1.02
)

// latencyBound is the upper bound of bucket i.
func latencyBound(i int) time.Duration {
	return time.Duration(float64(latencyFirst) * math.Pow(latencyGrowth, float64(i)))
}

// Record adds one duration.
func (l *Latency) Record(d time.Duration) {
	i := 0
	if d > latencyFirst {
		i = int(math.Ceil(math.Log(float64(d)/float64(latencyFirst)) / math.Log(latencyGrowth)))
	}
	l.counts[min(i, latencyBuckets-1)].Add(1)
	l.total.Add(1)
}

// Add adds every duration o recorded, so that the quantiles of several
// histograms (several kubelets of one process) can be read together.
func (l *Latency) Add(o *Latency) {
	for i := range l.counts {
		l.counts[i].Add(o.counts[i].Load())
	}
	l.total.Add(o.total.Load())
}

// Snapshot returns a copy of what l holds now: taken as a window starts, it
// is what [Latency.Sub] takes away at the window's end.
func (l *Latency) Snapshot() *Latency {
	var c Latency
	c.Add(l)
	return &c
}

// Sub takes every duration o holds away from l, o being an earlier
// [Latency.Snapshot] of l: l then holds the durations recorded since, so
// that a steady window's quantiles can be read apart from a run's start.
func (l *Latency) Sub(o *Latency) {
	for i := range l.counts {
		l.counts[i].Add(-o.counts[i].Load())
	}
	l.total.Add(-o.total.Load())
}

// Count returns how many durations were recorded.
func (l *Latency) Count() int64 { return l.total.Load() }

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1) of the durations recorded, or 0 if none was.
func (l *Latency) Quantile(q float64) time.Duration {
	var counts [latencyBuckets]int64
	var total int64
	for i := range counts {
		counts[i] = l.counts[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, c := range counts {
		if seen += c; seen >= max(rank, 1) {
			return latencyBound(i)
		}
	}
	return latencyBound(latencyBuckets - 1)
}

// timedTransport times the heartbeat requests that pass through it (from
// sending the request to reading the response's headers) into a
// [Latency]; every other request passes untouched.
type timedTransport struct {
	next http.RoundTripper
	beat *Latency
	// dead, once set, fails every request before it leaves: the node
	// was killed (Kubelet.Stop), and sends nothing more.
	dead atomic.Bool
}

// errKilled is what a killed node's requests fail with.
var errKilled = errors.New("kubelet: the node was killed")

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.dead.Load() {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errKilled
	}
	if !strings.HasSuffix(r.URL.Path, protocol.PathHeartbeat) {
		return t.next.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		t.beat.Record(time.Since(start))
	}
	return resp, err
}

// CloseIdleConnections forwards to the transport wrapped: the client calls
// it when a server drains or goes away.
func (t *timedTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Above returns how many durations recorded were above d, to within a
// bucket (2 %): the slow heartbeats of a process, for a timeline of when
// they came.
func (l *Latency) Above(d time.Duration) int64 {
	var n int64
	for i := latencyBuckets - 1; i >= 0 && latencyBound(i) > d; i-- {
		n += l.counts[i].Load()
	}
	return n
}

// Counts returns how many durations each bucket holds: a histogram to
// send to another process, which adds it to its own with AddCounts.
func (l *Latency) Counts() []int64 {
	out := make([]int64, latencyBuckets)
	for i := range out {
		out[i] = l.counts[i].Load()
	}
	return out
}

// AddCounts adds c, another histogram's Counts, to l; c of another length
// (another build's buckets) adds as much as both hold.
func (l *Latency) AddCounts(c []int64) {
	for i := range min(len(c), latencyBuckets) {
		l.counts[i].Add(c[i])
		l.total.Add(c[i])
	}
}
