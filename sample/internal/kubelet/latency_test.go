package kubelet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

// A quantile is the bound of the bucket holding it: never below the true
// value, at most 25 % above it.
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
		assert.LessOrEqual(t, got, c.true*5/4, "q%v", c.q)
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
