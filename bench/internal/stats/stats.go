// Package stats summarises a benchmark's rounds: the median of a figure
// over rounds, the ratio of two medians, and a latency distribution thinned
// to the points a plot needs.
package stats

import (
	"math"
	"slices"
	"time"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio returns a/b, or NaN when b is zero or either is NaN.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// Point is one point of a cumulative distribution: Fraction of all values
// are at or below Value.
type Point struct {
	Value    time.Duration
	Fraction float64
}

// CDF returns the cumulative distribution of sorted (ascending) at about n
// quantiles spaced so that the tail keeps its detail: evenly up to the
// median, then ever closer towards the maximum (p90, p99, p99.9 ... all
// present when there are enough values). The maximum is always the last
// point.
func CDF(sorted []time.Duration, n int) []Point {
	if len(sorted) == 0 || n < 2 {
		return nil
	}
	var pts []Point
	add := func(q float64) {
		rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
		rank = min(max(rank, 1), len(sorted))
		p := Point{Value: sorted[rank-1], Fraction: float64(rank) / float64(len(sorted))}
		if len(pts) > 0 && pts[len(pts)-1].Fraction >= p.Fraction {
			return
		}
		pts = append(pts, p)
	}
	half := n / 2
	for i := 1; i <= half; i++ {
		add(0.5 * float64(i) / float64(half))
	}
	// The tail: 1 - 0.5·10^(-k·3/(n-half)), reaching 1 - 0.0005 (p99.95).
	rest := n - half
	for i := 1; i < rest; i++ {
		add(1 - 0.5*math.Pow(10, -3*float64(i)/float64(rest-1)))
	}
	add(1)
	return pts
}
