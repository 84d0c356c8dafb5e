package upgradesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// Traffic is a stream of calls from one component to another, made
// through the caller's [Instance.Clients] entry for the callee, bounded in
// rate, count and time.
type Traffic struct {
	// From is the calling component and To the component it calls.
	From, To string
	// Rate is calls per second for the pair, spread round-robin over From's
	// running replicas; default 20.
	Rate float64
	// MaxCalls bounds the calls made in one run; default 2000.
	MaxCalls int
	// MaxInFlight bounds the calls waiting at once (blocked calls wait);
	// beyond it a tick is skipped; default 200.
	MaxInFlight int
	// Timeout bounds each call; default [Config.CallTimeout].
	Timeout time.Duration
	// Call makes one call with c and reports whether it was acknowledged
	// (nil). It must make exactly one framework call with ctx, which
	// carries the call's id (see [CallID]).
	Call func(ctx context.Context, c *framework.Client) error
}

// Config declares a system under test: its components, the traffic
// between them, and the user's invariants, hooks and conditions.
type Config struct {
	// Components are the system's components.
	Components []Component
	// Traffic flows while every plan runs.
	Traffic []Traffic
	// Watches are topics whose watchers must converge.
	Watches []Watch
	// Invariants are the user's own checks, beside the built-in ones.
	Invariants []Invariant
	// Hooks run at their stage; a plan without a step for a stage gets one
	// inserted (see [Sim.Prepare]).
	Hooks []Hook
	// Conditions are named conditions that parsed plans' wait-until steps
	// may name, beside "connected" and "N calls acknowledged".
	Conditions []Condition

	// BlockedBound is how long a client may stay without a session while a
	// compatible server is available to it; default 10s. Bounds here are
	// generous so a verdict never hinges on timing luck; tight bounds
	// belong to benchmarks.
	BlockedBound time.Duration
	// SettleBound bounds, after the last step, how long the kit waits for
	// clients to connect and for After invariants to pass; default
	// BlockedBound.
	SettleBound time.Duration
	// CallTimeout bounds each traffic call by default; default 15s.
	CallTimeout time.Duration
	// SampleEvery is how often the kit samples sessions for the timeline
	// and the During invariants; default 20ms.
	SampleEvery time.Duration
	// Logger receives the components' logs through [Env.Logger]; default:
	// discarded.
	Logger *slog.Logger
	// HTTPS makes every replica's URL https://: set it when every
	// replica's Server serves TLS (ServerConfig.MTLS or TLSConfig), and give
	// each client a transport that trusts them (ClientConfig.Transport, which
	// [Env.ClientConfig] wraps with the kit's faults). The kit serves a
	// Handler over plain HTTP only, so a replica returning one fails to start.
	HTTPS bool
	// TimelineDir is where [Sim.Run] writes SVG timelines; default
	// $LOCKSTEP_TIMELINE_DIR, else lockstep-upgradesim in the system's
	// temporary directory.
	TimelineDir string
}

// Sim is a declared system, ready to run plans against. It holds no
// running state: every [Sim.Run] starts from nothing on fresh addresses, so
// plans of one Sim may run in parallel.
type Sim struct {
	cfg        Config
	components map[string]*Component
	order      []string // component names as declared
}

// New checks cfg, fills its defaults, and returns a Sim.
func New(cfg Config) (*Sim, error) {
	s := &Sim{cfg: cfg, components: map[string]*Component{}}
	var errs []error
	for i := range s.cfg.Components {
		c := &s.cfg.Components[i]
		if err := c.check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.components[c.Name]; dup {
			errs = append(errs, fmt.Errorf("component %s declared twice", c.Name))
			continue
		}
		s.components[c.Name] = c
		s.order = append(s.order, c.Name)
	}
	for i := range s.cfg.Traffic {
		tr := &s.cfg.Traffic[i]
		if s.components[tr.From] == nil || s.components[tr.To] == nil {
			errs = append(errs, fmt.Errorf("traffic %s→%s names an undeclared component", tr.From, tr.To))
		}
		if tr.Call == nil {
			errs = append(errs, fmt.Errorf("traffic %s→%s has no Call", tr.From, tr.To))
		}
		if tr.Rate <= 0 {
			tr.Rate = 20
		}
		if tr.MaxCalls <= 0 {
			tr.MaxCalls = 2000
		}
		if tr.MaxInFlight <= 0 {
			tr.MaxInFlight = 200
		}
	}
	for _, w := range s.cfg.Watches {
		if w.Topic == "" || s.components[w.Watcher] == nil || s.components[w.Holder] == nil {
			errs = append(errs, fmt.Errorf("watch %q of %s by %s names no topic or an undeclared component", w.Topic, w.Holder, w.Watcher))
		}
	}
	names := map[string]bool{}
	for _, inv := range s.cfg.Invariants {
		if inv.Name == "" || names[inv.Name] || builtinInvariant(inv.Name) {
			errs = append(errs, fmt.Errorf("invariant name %q is empty, repeated or built in", inv.Name))
		}
		names[inv.Name] = true
	}
	for _, h := range s.cfg.Hooks {
		if h.Name == "" || h.Run == nil || !h.Stage.valid() {
			errs = append(errs, fmt.Errorf("hook %q needs a name, a Run and a stage (%s, %s or %s)",
				h.Name, StageStartup, StageMixedVersion, StageAfterUpgrade))
		}
	}
	for _, c := range s.cfg.Conditions {
		if c.Name == "" || c.Holds == nil {
			errs = append(errs, fmt.Errorf("condition %q needs a name and Holds", c.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("upgradesim: %w", err)
	}
	for i := range s.cfg.Traffic {
		if s.cfg.Traffic[i].Timeout <= 0 {
			s.cfg.Traffic[i].Timeout = s.callTimeout()
		}
	}
	if s.cfg.BlockedBound <= 0 {
		s.cfg.BlockedBound = 10 * time.Second
	}
	if s.cfg.SettleBound <= 0 {
		s.cfg.SettleBound = s.cfg.BlockedBound
	}
	if s.cfg.SampleEvery <= 0 {
		s.cfg.SampleEvery = 20 * time.Millisecond
	}
	if s.cfg.Logger == nil {
		s.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func (s *Sim) callTimeout() time.Duration {
	if s.cfg.CallTimeout <= 0 {
		s.cfg.CallTimeout = 15 * time.Second
	}
	return s.cfg.CallTimeout
}

// Run prints plan, runs it, logs the timeline, writes it as SVG, and
// reports every violation with t.Errorf: each names the seed, the step and
// the invariant. It returns the report for further checks.
func (s *Sim) Run(t testing.TB, plan Plan) *Report {
	t.Helper()
	prepared, err := s.Prepare(plan)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s(a random plan replays with LOCKSTEP_SEED=%d)", prepared, plan.Seed)
	rep, err := s.Execute(context.Background(), plan)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s", rep.Timeline.Text())
	if rep.Failed() || testing.Verbose() {
		if path, err := s.writeSVG(t.Name(), rep); err != nil {
			t.Logf("upgradesim: writing the SVG timeline: %v", err)
		} else {
			t.Logf("upgradesim: SVG timeline in %s", path)
		}
	}
	for _, v := range rep.Violations {
		t.Errorf("%v", v)
	}
	return rep
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (s *Sim) writeSVG(test string, rep *Report) (string, error) {
	dir := s.cfg.TimelineDir
	if dir == "" {
		dir = os.Getenv("LOCKSTEP_TIMELINE_DIR")
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lockstep-upgradesim")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := unsafeFileChars.ReplaceAllString(test, "_") + "-seed" + strconv.FormatInt(rep.Plan.Seed, 10) + ".svg"
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(rep.Timeline.SVG()), 0o644)
}
