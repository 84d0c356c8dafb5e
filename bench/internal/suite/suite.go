// Package suite runs lockstep beside the systems its users would pick
// instead (gRPC-go with protobuf and with JSON, net/http with
// encoding/json, connect-go, embedded etcd) on the project's benchmark
// message, client and server in one process over 127.0.0.1, alternating
// the variants of each workload over several rounds, and collects every
// figure for the report.
package suite

import (
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/bench/internal/hostload"
)

// Config says how long and how often to measure.
type Config struct {
	// Quick runs every workload for a few seconds: a check that the suite
	// works, not figures to quote.
	Quick bool
	// Rounds is how many times each variant of a workload runs, the
	// variants alternating within a round.
	Rounds int
	// MinIdle is the host idle share a round must start at (0.90); a round
	// that would start below it is put off and checked again up to
	// Retries times, then run and flagged.
	MinIdle float64
	Retries int
	// Self is this program's path, run again as the server process of the
	// workloads that need one (crash detection, heartbeats, memory).
	Self string
	// Log receives progress lines.
	Log io.Writer
	// Observe, when set, is called as each round's measurement starts,
	// and what it returns when it ends: fanout-bench profiles rounds with
	// it.
	Observe func(workload, variant string) (end func())
	// NoSettle skips the collection that each fan-out round starts with
	// (see runFanout): for measuring what the settling changes.
	NoSettle bool
	// FanoutAllOpen opens every fan-out variant's watchers before the
	// first round and keeps them open through all the rounds, instead of
	// each variant's only during its own: for measuring what the other
	// variants' caches cost the one measured.
	FanoutAllOpen bool
	// ReconnectClients is how many lockstep clients of the server's
	// address each reconnect pair's process holds (1 when zero): one makes
	// the blocked call, the others wait with it, as the clients of a
	// process with several contracts or nodes at one server do. The
	// process's prober of the address serves them all; before it, each
	// client redialled on its own. For measuring P6 in that condition,
	// not part of make bench.
	ReconnectClients int
	// ReconnectBackoffMax, when set, is the lockstep clients'
	// Backoff.Max in the reconnect workload (the default is 100 ms): the
	// budget the prober dials a dark address on follows it. For
	// measuring what P6 costs in dials, not part of make bench.
	ReconnectBackoffMax time.Duration
}

// Suite runs the workloads and holds what they measured.
type Suite struct {
	cfg     Config
	Results *results.Results
	started time.Time

	// validationMismatches names the corpus documents the two validators
	// disagree on.
	validationMismatches []string
}

// New returns a suite with cfg, its zero fields set to their defaults.
func New(cfg Config) *Suite {
	if cfg.Rounds < 1 {
		cfg.Rounds = 3
	}
	if cfg.ReconnectClients < 1 {
		cfg.ReconnectClients = 1
	}
	if cfg.MinIdle == 0 {
		cfg.MinIdle = 0.90
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Suite{cfg: cfg, Results: results.NewResults(), started: time.Now()}
}

// Config returns the suite's configuration.
func (s *Suite) Config() Config { return s.cfg }

// pick returns quick when the suite runs quickly, full otherwise.
func pick[T any](s *Suite, full, quick T) T {
	if s.cfg.Quick {
		return quick
	}
	return full
}

func (s *Suite) logf(format string, args ...any) {
	fmt.Fprintf(s.cfg.Log, "%6.1fs  %s\n", time.Since(s.started).Seconds(), fmt.Sprintf(format, args...))
}

// quiet is the logger of every lockstep server and client in the suite.
var quiet = slog.New(slog.DiscardHandler)

// round runs fn as one round of workload's variant: it waits for the host
// to be idle enough (up to the retries), runs fn, and records the round.
func (s *Suite) round(workload, variant string, fn func() (results.Round, error)) error {
	const window = 250 * time.Millisecond
	var before hostload.Load
	retries := 0
	for {
		l, err := hostload.Measure(window)
		if err != nil {
			l = hostload.Load{Idle: math.NaN()}
		}
		before = l
		if math.IsNaN(l.Idle) || l.Idle >= s.cfg.MinIdle || retries == s.cfg.Retries {
			break
		}
		retries++
		time.Sleep(250 * time.Millisecond)
	}
	a, aerr := hostload.Read()
	var end func()
	if s.cfg.Observe != nil {
		end = s.cfg.Observe(workload, variant)
	}
	r, err := fn()
	if end != nil {
		end()
	}
	if err != nil {
		return fmt.Errorf("%s, %s: %w", workload, variant, err)
	}
	if b, berr := hostload.Read(); aerr == nil && berr == nil {
		r.During = hostload.Between(a, b)
	}
	r.Before, r.Retries = before, retries
	r.Flagged = !math.IsNaN(before.Idle) && before.Idle < s.cfg.MinIdle
	s.Results.Add(workload, variant, r)
	s.logf("%-22s %-34s %s (before: %s%s)", workload, variant, summary(r.Metrics), before, flagText(r.Flagged))
	return nil
}

func flagText(f bool) string {
	if f {
		return ", FLAGGED"
	}
	return ""
}

func summary(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%s=%.4g ", k, m[k])
	}
	return out
}

// Write builds the report of what s measured; facts are the machine and
// run facts, plotDir the plots' folder relative to the report, page the
// report's WrittenBy and Docs (the rest of the run is s's).
func (s *Suite) Write(facts [][2]string, plotDir string, page results.Run) results.Writeup {
	page.Quick, page.Rounds, page.ValidationMismatches = s.cfg.Quick, s.cfg.Rounds, s.validationMismatches
	return results.Write(page, s.Results, facts, plotDir)
}
