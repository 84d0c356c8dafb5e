// Package results holds what a run of the comparison suite measured (every
// round of every variant of every workload, with the host's load around
// it) and turns it into the report: the tables, the plots and each target
// judged met or missed on the medians of the run. It knows the workloads'
// names and sizes, but runs nothing, so it is tested without the systems
// the suite compares.
package results

import (
	"math"
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/bench/internal/hostload"
	"github.com/lockstep-dev/lockstep/bench/internal/stats"
)

// Round is what one run of one variant measured.
type Round struct {
	// Metrics are the round's figures by name (see the workloads for the
	// names and units).
	Metrics map[string]float64
	// Latencies are the round's latencies, sorted, where the workload
	// plots their distribution.
	Latencies []time.Duration
	// Before is the host's load in the moment before the round started,
	// During its load while the round ran (the suite's own work included).
	Before, During hostload.Load
	// Retries is how often the round was put off for a busy host; Flagged
	// says it ran on a host still under the idle threshold.
	Retries int
	Flagged bool
}

// Results are every round of every variant of every workload, in the
// order they were first run.
type Results struct {
	// Failures names each workload that stopped with an error.
	Failures map[string]string
	// Walls are the workloads' wall times, in the order they ran.
	Walls     []Wall
	workloads []string
	variants  map[string][]string
	rounds    map[string]map[string][]Round
}

// Wall is one workload's wall time, setup and every round included; the
// workload is named as lockstep-bench's -only flag names it.
type Wall struct {
	Workload string
	Time     time.Duration
}

// NewResults returns empty results.
func NewResults() *Results {
	return &Results{Failures: map[string]string{}, variants: map[string][]string{}, rounds: map[string]map[string][]Round{}}
}

// Add records a round of a workload's variant.
func (r *Results) Add(workload, variant string, round Round) {
	if _, ok := r.rounds[workload]; !ok {
		r.workloads = append(r.workloads, workload)
		r.rounds[workload] = map[string][]Round{}
	}
	if _, ok := r.rounds[workload][variant]; !ok {
		r.variants[workload] = append(r.variants[workload], variant)
	}
	r.rounds[workload][variant] = append(r.rounds[workload][variant], round)
}

// Workloads returns the workloads in the order they ran.
func (r *Results) Workloads() []string { return r.workloads }

// Variants returns a workload's variants in the order they ran.
func (r *Results) Variants(workload string) []string { return r.variants[workload] }

// Rounds returns a variant's rounds.
func (r *Results) Rounds(workload, variant string) []Round { return r.rounds[workload][variant] }

// Median returns the median of a metric over a variant's rounds, NaN when
// it was not measured.
func (r *Results) Median(workload, variant, metric string) float64 {
	var xs []float64
	for _, rd := range r.rounds[workload][variant] {
		if v, ok := rd.Metrics[metric]; ok && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return stats.Median(xs)
}

// Latencies returns every latency of a variant's rounds, sorted.
func (r *Results) Latencies(workload, variant string) []time.Duration {
	var all []time.Duration
	for _, rd := range r.rounds[workload][variant] {
		all = append(all, rd.Latencies...)
	}
	slices.Sort(all)
	return all
}

// Flagged returns how many of a variant's rounds were flagged.
func (r *Results) Flagged(workload, variant string) int {
	n := 0
	for _, rd := range r.rounds[workload][variant] {
		if rd.Flagged {
			n++
		}
	}
	return n
}
