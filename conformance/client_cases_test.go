package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conformance"
)

func clientCases(t *testing.T) []*conformance.Case {
	t.Helper()
	cases, err := conformance.LoadCases(conformance.Cases(), "client")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no client-side cases")
	}
	return cases
}

func requireAllPass(t *testing.T, who string, results []conformance.Result) {
	t.Helper()
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
	t.Logf("%d/%d client cases pass with %s", passed, len(results), who)
}

// TestClientCasesGo plays every client-side case with the framework's
// client against the scripted server.
func TestClientCasesGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	results := conformance.RunClientCases(ctx, conformance.GoClient(), clientCases(t), conformance.DefaultVars(fingerprint(t)))
	requireAllPass(t, "the framework's client", results)
}

// naiveClient is a deliberately broken client: it handshakes, calls once
// and reports whatever it was answered, never resending, then closes its
// session.
func naiveClient(fp string) conformance.ClientUnderTest {
	return func(ctx context.Context, scenario, baseURL string) (map[string]any, error) {
		post := func(method, path, session string, body any) (int, map[string]any, error) {
			data, _ := json.Marshal(body)
			req, err := http.NewRequestWithContext(ctx, method, baseURL+path, bytes.NewReader(data))
			if err != nil {
				return 0, nil, err
			}
			if session != "" {
				req.Header.Set("Lockstep-Session", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out, nil
		}
		_, welcome, err := post("POST", "/lockstep/handshake", "", map[string]any{
			"contract": "conformance", "component": "conformance-client", "instance": "naive", "release": "1.0.0",
			"offers": []any{map[string]any{"version": "1.0.0", "fingerprint": fp}},
		})
		if err != nil {
			return nil, err
		}
		session, _ := welcome["session"].(string)
		if session == "" {
			return map[string]any{"error": welcome}, nil
		}
		status, answer, err := post("POST", "/lockstep/conformance/1.0.0/Echo", session, map[string]any{"text": "conformance"})
		if err != nil {
			return nil, err
		}
		_, _, _ = post("DELETE", "/lockstep/session", session, nil)
		if status != 200 {
			return map[string]any{"error": answer}, nil
		}
		return map[string]any{"ok": answer}, nil
	}
}

// TestClientCasesNaive shows that the client-side cases catch a client
// that does not resend, and reads any welcome: the resend cases and the
// ambiguous welcome's fail, the others pass.
func TestClientCasesNaive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var calls []*conformance.Case
	for _, c := range clientCases(t) {
		if c.Scenario == "call" {
			calls = append(calls, c)
		}
	}
	results := conformance.RunClientCases(ctx, naiveClient(fingerprint(t)), calls, conformance.DefaultVars(fingerprint(t)))
	failed := 0
	for _, r := range results {
		mustFail := strings.Contains(r.Case, "/resend-") || strings.HasSuffix(r.Case, "/refuse-ambiguous-welcome")
		switch {
		case mustFail && r.Err == nil:
			t.Errorf("%s passes with a client that never resends", r.Case)
		case !mustFail && r.Err != nil:
			t.Errorf("%s fails with a client that only does not resend: %v", r.Case, r.Err)
		case r.Err != nil:
			failed++
			t.Logf("FAIL (as it must) %s: %v", r.Case, r.Err)
		}
	}
	if failed == 0 {
		t.Fatal("no case caught the client that never resends")
	}
}
