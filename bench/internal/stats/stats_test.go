package stats

import (
	"math"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"odd count takes the middle", []float64{9, 1, 5}, 5},
		{"even count takes the mean of the middle two", []float64{4, 1, 3, 10}, 3.5},
		{"one value", []float64{2}, 2},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("%s: Median(%v) = %v, want %v", tt.name, tt.xs, got, tt.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 || xs[1] != 1 {
		t.Errorf("Median reordered its input: %v", xs)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(3, 2); got != 1.5 {
		t.Errorf("Ratio(3, 2) = %v", got)
	}
	for _, got := range []float64{Ratio(1, 0), Ratio(math.NaN(), 1), Ratio(1, math.NaN())} {
		if !math.IsNaN(got) {
			t.Errorf("Ratio without a figure = %v, want NaN", got)
		}
	}
}

func TestCDFKeepsTheTailAndEndsAtTheMaximum(t *testing.T) {
	sorted := make([]time.Duration, 10000)
	for i := range sorted {
		sorted[i] = time.Duration(i+1) * time.Microsecond
	}
	pts := CDF(sorted, 40)
	if len(pts) < 20 || len(pts) > 40 {
		t.Fatalf("CDF gave %d points, want about 40", len(pts))
	}
	last := pts[len(pts)-1]
	if last.Value != 10000*time.Microsecond || last.Fraction != 1 {
		t.Fatalf("the last point is %+v, want the maximum at fraction 1", last)
	}
	var sawP99 bool
	for i, p := range pts {
		if i > 0 && (p.Fraction <= pts[i-1].Fraction || p.Value < pts[i-1].Value) {
			t.Fatalf("points %d and %d are not rising: %+v %+v", i-1, i, pts[i-1], p)
		}
		if p.Fraction >= 0.99 && p.Fraction < 1 {
			sawP99 = true
		}
	}
	if !sawP99 {
		t.Fatal("no point between p99 and the maximum")
	}
	if CDF(nil, 40) != nil {
		t.Fatal("CDF of nothing has points")
	}
}
