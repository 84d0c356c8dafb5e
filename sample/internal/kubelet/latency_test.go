package kubelet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

// A quantile is the bound of the bucket holding it: never below the true
// value, at most 2 % above it.
func TestLatencyQuantiles(t *testing.T) {
	var l kubelet.Latency
	assert.Zero(t, l.Quantile(0.99), "nothing recorded")
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i) * time.Millisecond)
	}
	assert.EqualValues(t, 1000, l.Count())
	for _, c := range []struct {
		q    float64
		true time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := l.Quantile(c.q)
		assert.GreaterOrEqual(t, got, c.true, "q%v", c.q)
		assert.LessOrEqual(t, got, c.true*102/100, "q%v", c.q)
	}
	var tiny kubelet.Latency
	tiny.Record(time.Microsecond)
	assert.Equal(t, 50*time.Microsecond, tiny.Quantile(1), "the first bucket holds everything up to 50 µs")
	var huge kubelet.Latency
	huge.Record(time.Hour)
	assert.Greater(t, huge.Quantile(1), time.Minute, "the last bucket holds everything beyond")
}

// Histograms added together answer the quantiles of all their durations.
func TestLatencyAdd(t *testing.T) {
	var a, b, sum kubelet.Latency
	for range 98 {
		a.Record(time.Millisecond)
	}
	b.Record(time.Second)
	b.Record(time.Second)
	sum.Add(&a)
	sum.Add(&b)
	assert.EqualValues(t, 100, sum.Count())
	assert.Less(t, sum.Quantile(0.98), 2*time.Millisecond)
	assert.GreaterOrEqual(t, sum.Quantile(0.99), time.Second)
}

// Resolution around P9's heartbeat bound: 49 ms and 51 ms fall in
// buckets whose bounds lie on either side of 50 ms.
func TestLatencyTellsFiftyMilliseconds(t *testing.T) {
	var below, above kubelet.Latency
	below.Record(49 * time.Millisecond)
	above.Record(51 * time.Millisecond)
	assert.LessOrEqual(t, below.Quantile(1), 50*time.Millisecond)
	assert.Greater(t, above.Quantile(1), 50*time.Millisecond)
}

// A snapshot taken as a window starts, taken away at its end, leaves the
// window's durations only: a slow start does not show in them.
func TestLatencySubLeavesTheWindow(t *testing.T) {
	var l kubelet.Latency
	for range 100 {
		l.Record(5 * time.Second) // the start's handshake storm
	}
	start := l.Snapshot()
	for range 1000 {
		l.Record(2 * time.Millisecond)
	}
	l.Record(40 * time.Millisecond)
	assert.EqualValues(t, 1101, l.Count())
	assert.GreaterOrEqual(t, l.Quantile(0.99), 5*time.Second, "the whole run's p99 holds the start")
	l.Sub(start)
	assert.EqualValues(t, 1001, l.Count())
	assert.Less(t, l.Quantile(0.99), 3*time.Millisecond, "the window's p99")
	got := l.Quantile(1)
	assert.GreaterOrEqual(t, got, 40*time.Millisecond, "the window's largest")
	assert.LessOrEqual(t, got, 41*time.Millisecond, "the window's largest")
}

// A histogram sent as its Counts and added to another holds what both
// recorded; Above counts the durations over a bound, to within a bucket.
func TestLatencyCountsAndAbove(t *testing.T) {
	var a, b kubelet.Latency
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(i) * 10 * time.Millisecond)
	}
	var both kubelet.Latency
	both.AddCounts(a.Counts())
	both.AddCounts(b.Counts())
	assert.EqualValues(t, 200, both.Count())
	assert.Equal(t, b.Quantile(1), both.Quantile(1))
	assert.EqualValues(t, 0, a.Above(time.Second))
	assert.EqualValues(t, 90, b.Above(105*time.Millisecond), "110 ms … 1 s")
	assert.EqualValues(t, 90, both.Above(105*time.Millisecond), "a's are all below")
	both.AddCounts(a.Counts()[:10])
	assert.EqualValues(t, 200, both.Count(), "a's first buckets hold nothing")
}
