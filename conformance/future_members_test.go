package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conformance"
)

// TestHelloFutureMembers: today's server, over HTTP on 127.0.0.1, welcomes
// a hello carrying members it does not know, at the top level and in an
// offer, and the session it opens serves calls; a hello that repeats a key
// or spells a known member in another case is refused 400
// invalid_argument, naming the key, and opens nothing. The conformance
// case handshake/future-members says the same to any server; it passes
// here too.
func TestHelloFutureMembers(t *testing.T) {
	ref := startReference(t)
	c, err := conformance.Contract()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	hello := func(instance, extra, offerExtra string) string {
		return `{"contract":"` + c.Name() + `","component":"` + c.Client() + `","instance":"` + instance + `","release":"1.0.0",` +
			`"offers":[{"version":"` + c.Version() + `","fingerprint":"` + c.Fingerprint() + `"` + offerExtra + `}]` + extra + `}`
	}
	post := func(path, body string, header map[string]string) (int, http.Header, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ref.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s answered %d with %q: %v", path, resp.StatusCode, b, err)
		}
		return resp.StatusCode, resp.Header, out
	}

	t.Run("future members are welcomed", func(t *testing.T) {
		body := hello("future-1", `,"extraField":{"nested":[1,{"x":null}],"Contract":"not read"},"protocol":2`,
			`,"extraField":"x","derivesFrom":"0.9.0"`)
		status, _, w := post("/lockstep/handshake", body, nil)
		if status != http.StatusOK {
			t.Fatalf("hello with future members answered %d: %v", status, w)
		}
		session, _ := w["session"].(string)
		if session == "" || w["version"] != c.Version() || w["fingerprint"] != c.Fingerprint() {
			t.Fatalf("welcome %v: want a session at %s %s", w, c.Version(), c.Fingerprint())
		}
		status, _, echo := post("/lockstep/"+c.Name()+"/"+c.Version()+"/Echo", `{"text":"after a future hello"}`,
			map[string]string{"Lockstep-Session": session})
		if status != http.StatusOK || echo["text"] != "after a future hello" {
			t.Fatalf("Echo on the welcomed session answered %d %v", status, echo)
		}
	})

	refused := []struct{ name, body, key string }{
		{"repeated key", hello("future-2", `,"component":"`+c.Client()+`"`, ""), `"component" appears twice`},
		{"repeated key in another case", hello("future-2", `,"Instance":"future-3"`, ""), `"Instance" appears twice`},
		{"known key in another case", strings.Replace(hello("future-2", "", ""), `"component"`, `"Component"`, 1), `"Component" is spelt "component"`},
		{"known key under Unicode folding", strings.Replace(hello("future-2", "", ""), `"instance"`, `"in\u017ftance"`, 1), `is spelt "instance"`},
		{"repeated key in an offer", hello("future-2", "", `,"Version":"`+c.Version()+`"`), `"Version" appears twice`},
		{"offer key in another case", strings.Replace(hello("future-2", "", ""), `"fingerprint"`, `"fingerPrint"`, 1), `"fingerPrint" is spelt "fingerprint"`},
		{"repeated key inside a future member", hello("future-2", `,"future":{"a":1,"A":2}`, ""), `"A" appears twice`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, header, e := post("/lockstep/handshake", tc.body, nil)
			msg, _ := e["message"].(string)
			if status != http.StatusBadRequest || e["code"] != "invalid_argument" || !strings.Contains(msg, tc.key) {
				t.Fatalf("answered %d %v; want 400 invalid_argument naming %s", status, e, tc.key)
			}
			if header.Get("Lockstep-Not-Processed") != "" {
				t.Fatal("a malformed hello is marked Lockstep-Not-Processed; the same hello fails anywhere")
			}
		})
	}
	// None of the refused hellos opened a session: instance future-2 holds none.
	var st map[string]any
	resp, err := hc.Get(ref.URL + "/lockstep/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status: %v", err)
	}
	if bytes.Contains(b, []byte(`"future-2"`)) || bytes.Contains(b, []byte(`"future-3"`)) {
		t.Fatalf("a refused hello opened a session: %s", b)
	}
	if !bytes.Contains(b, []byte(`"future-1"`)) {
		t.Fatalf("the welcomed hello's session is not in the status: %s", b)
	}

	cases, err := conformance.LoadCases(conformance.Cases(), "server")
	if err != nil {
		t.Fatal(err)
	}
	var mine []*conformance.Case
	for _, k := range cases {
		if k.Name == "server/handshake/future-members" {
			mine = append(mine, k)
		}
	}
	if len(mine) != 1 {
		t.Fatal("no conformance case handshake/future-members")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range conformance.RunServerCases(ctx, conformance.Target{URL: ref.URL}, mine, conformance.DefaultVars(c.Fingerprint())) {
		if r.Err != nil || r.Skipped != "" {
			t.Fatalf("%s: %v %s", r.Case, r.Err, r.Skipped)
		}
	}
}
