package conformance_test

import (
	"context"
	"io/fs"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conformance"
	"github.com/lockstep-dev/lockstep/framework"
)

// referenceConfig is the reference server's configuration in tests: short
// session timing so that lapse and ping cases take seconds, not tens of
// them, yet a TTL (2 s) that no stall of a loaded machine between a
// case's steps outlasts, since a session lapsed early fails the case.
func referenceConfig() framework.ServerConfig {
	return referenceConfigTTL(2 * time.Second)
}

// referenceConfigTTL is referenceConfig with a session TTL of ttl.
func referenceConfigTTL(ttl time.Duration) framework.ServerConfig {
	return framework.ServerConfig{
		SessionTTL:   ttl,
		Heartbeat:    500 * time.Millisecond,
		DrainTimeout: 20 * time.Second,
		Logger:       slog.New(slog.DiscardHandler),
	}
}

func startReference(t *testing.T) *conformance.Reference {
	t.Helper()
	return startReferenceConfig(t, referenceConfig())
}

func startReferenceConfig(t *testing.T, cfg framework.ServerConfig) *conformance.Reference {
	t.Helper()
	r, err := conformance.StartReference("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// target is the reference server as the runner's target: one shared
// server, and a new one for each case that drains its server.
func target(t *testing.T) conformance.Target {
	t.Helper()
	return targetConfig(t, referenceConfig())
}

func targetConfig(t *testing.T, cfg framework.ServerConfig) conformance.Target {
	t.Helper()
	shared := startReferenceConfig(t, cfg)
	return conformance.Target{
		URL: shared.URL,
		Fresh: func() (string, func(), error) {
			r, err := conformance.StartReference("127.0.0.1:0", cfg)
			if err != nil {
				return "", nil, err
			}
			return r.URL, func() { _ = r.Stop() }, nil
		},
	}
}

func serverCases(t *testing.T) []*conformance.Case {
	t.Helper()
	cases, err := conformance.LoadCases(conformance.Cases(), "server")
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func fingerprint(t *testing.T) string {
	t.Helper()
	c, err := conformance.Contract()
	if err != nil {
		t.Fatal(err)
	}
	return c.Fingerprint()
}

// longTTLCases are the server-side cases played against a server whose
// session TTL is the one given, not referenceConfig's 2 s. The ping case
// wants two pings each within 0.75 x TTL while the server pings every
// TTL/2: with a 2 s TTL that leaves a 0.5 s margin, which a stall of a
// loaded machine can outlast; with 8 s it leaves 2 s, and the case still
// checks the same 0.75 x TTL bound.
var longTTLCases = map[string]time.Duration{
	"server/watch/ping": 8 * time.Second,
}

// TestServerCasesReference plays every server-side case against the
// framework's server: all of them pass.
func TestServerCasesReference(t *testing.T) {
	t.Parallel() // mostly waiting out TTLs, beside the other suite
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vars := conformance.DefaultVars(fingerprint(t))
	var short []*conformance.Case
	var results []conformance.Result
	for _, c := range serverCases(t) {
		ttl, long := longTTLCases[c.Name]
		if !long {
			short = append(short, c)
			continue
		}
		results = append(results, conformance.RunServerCases(ctx, targetConfig(t, referenceConfigTTL(ttl)), []*conformance.Case{c}, vars)...)
	}
	if len(results) != len(longTTLCases) {
		t.Errorf("played %d of the %d long-TTL cases: one is missing from cases/", len(results), len(longTTLCases))
	}
	results = append(results, conformance.RunServerCases(ctx, target(t), short, vars)...)
	passed := 0
	for _, r := range results {
		switch {
		case r.Skipped != "":
			t.Errorf("%s: skipped: %s", r.Case, r.Skipped)
		case r.Err != nil:
			t.Errorf("%s: %v", r.Case, r.Err)
		default:
			passed++
		}
	}
	t.Logf("%d/%d server cases pass against the framework's server", passed, len(results))
}

func fsReadFile(name string) ([]byte, error) {
	return fs.ReadFile(conformance.Cases(), name)
}
