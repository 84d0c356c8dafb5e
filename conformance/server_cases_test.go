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
	return framework.ServerConfig{
		SessionTTL:   2 * time.Second,
		Heartbeat:    500 * time.Millisecond,
		DrainTimeout: 20 * time.Second,
		Logger:       slog.New(slog.DiscardHandler),
	}
}

func startReference(t *testing.T) *conformance.Reference {
	t.Helper()
	r, err := conformance.StartReference("127.0.0.1:0", referenceConfig())
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
	shared := startReference(t)
	return conformance.Target{
		URL: shared.URL,
		Fresh: func() (string, func(), error) {
			r, err := conformance.StartReference("127.0.0.1:0", referenceConfig())
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

// TestServerCasesReference plays every server-side case against the
// framework's server: all of them pass.
func TestServerCasesReference(t *testing.T) {
	t.Parallel() // mostly waiting out TTLs, beside the other suite
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	results := conformance.RunServerCases(ctx, target(t), serverCases(t), conformance.DefaultVars(fingerprint(t)))
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
