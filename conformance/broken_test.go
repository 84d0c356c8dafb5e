package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conformance"
)

// brokenProxy is a deliberately broken server: the reference server behind
// a proxy that leaves out every watch stream's synced frame and answers
// handshake_required with 400 instead of 409.
func brokenProxy(t *testing.T, backend string) string {
	return proxy(t, backend, func(resp *http.Response) error {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
			resp.Body = dropSynced(resp.Body)
			return nil
		}
		if resp.StatusCode != http.StatusConflict {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if bytes.Contains(body, []byte(`"code":"handshake_required"`)) {
			resp.StatusCode = http.StatusBadRequest
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	})
}

// proxy starts a proxy to backend that passes every answer through modify
// (watch streams unbuffered) and returns its URL.
func proxy(t *testing.T, backend string, modify func(*http.Response) error) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	p.ModifyResponse = modify
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// brokenTarget is the runner's target of reference servers behind broken,
// which wraps a reference server's URL into a broken server's.
func brokenTarget(t *testing.T, broken func(t *testing.T, backend string) string) conformance.Target {
	return conformance.Target{
		URL: broken(t, startReference(t).URL),
		Fresh: func() (string, func(), error) {
			r, err := conformance.StartReference("127.0.0.1:0", referenceConfig())
			if err != nil {
				return "", nil, err
			}
			return broken(t, r.URL), func() { _ = r.Stop() }, nil
		},
	}
}

// dropSynced copies a watch stream line by line without its synced frames.
func dropSynced(body io.ReadCloser) io.ReadCloser {
	return rewriteLines(body, func(line []byte) []byte {
		if bytes.Contains(line, []byte(`"type":"synced"`)) {
			return nil
		}
		return line
	})
}

// rewriteLines copies a stream line by line, each line replaced by what
// rewrite returns for it (nothing for nil).
func rewriteLines(body io.ReadCloser, rewrite func(line []byte) []byte) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(body)
		for {
			line, err := r.ReadBytes('\n')
			if out := rewrite(line); len(out) > 0 {
				if _, werr := pw.Write(out); werr != nil {
					body.Close()
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				body.Close()
				return
			}
		}
	}()
	return pr
}

// TestServerCasesBroken plays the server-side cases against the broken
// server: exactly the cases whose files expect a synced frame or a 409
// handshake_required fail, and all others still pass.
func TestServerCasesBroken(t *testing.T) {
	t.Parallel() // mostly waiting out TTLs, beside the other suite
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tgt := brokenTarget(t, brokenProxy)
	cases := serverCases(t)
	// A broken synced makes the frame reads of a case wait for their
	// timeout; keep those short here.
	for _, c := range cases {
		for _, s := range c.Steps {
			if f, ok := s["frames"].(map[string]any); ok {
				f["within"] = "1s"
			}
		}
	}
	results := conformance.RunServerCases(ctx, tgt, cases, conformance.DefaultVars(fingerprint(t)))
	failed := 0
	for i, r := range results {
		text := caseText(t, cases[i])
		mustFail := strings.Contains(text, "type: synced") || expects409HandshakeRequired.MatchString(text)
		switch {
		case r.Skipped != "":
			t.Errorf("%s: skipped: %s", r.Case, r.Skipped)
		case mustFail && r.Err == nil:
			t.Errorf("%s passes against a server that omits synced and answers handshake_required with 400", r.Case)
		case !mustFail && r.Err != nil:
			t.Errorf("%s fails, though the server is broken only in ways it does not test: %v", r.Case, r.Err)
		case r.Err != nil:
			failed++
			t.Logf("FAIL (as it must) %s: %v", r.Case, r.Err)
		}
	}
	if failed == 0 {
		t.Fatal("no case caught the broken server")
	}
	t.Logf("%d/%d cases fail against the broken server, each one that tests what it breaks", failed, len(results))
}

// expects409HandshakeRequired finds an expectation of 409 handshake_required.
var expects409HandshakeRequired = regexp.MustCompile(`status: 409.*code: handshake_required`)

// caseText is the case's file, as the cases embedded in the package hold it.
func caseText(t *testing.T, c *conformance.Case) string {
	t.Helper()
	data, err := fsReadFile(c.Name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRevisionOrderCaseCatchesReorderedFrames plays the revision-order
// case against the reference server behind a proxy that swaps every two
// set frames after synced: the case must fail on the order, so that a
// server whose frames come out of order cannot pass it.
func TestRevisionOrderCaseCatchesReorderedFrames(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var order *conformance.Case
	for _, c := range serverCases(t) {
		if c.Name == "server/select/revision-order" {
			order = c
		}
	}
	if order == nil {
		t.Fatal("no case server/select/revision-order")
	}
	reorder := func(t *testing.T, backend string) string {
		return proxy(t, backend, func(resp *http.Response) error {
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
				resp.Body = swapSets(resp.Body)
			}
			return nil
		})
	}
	tgt := brokenTarget(t, reorder)
	res := conformance.RunServerCases(ctx, tgt, []*conformance.Case{order}, conformance.DefaultVars(fingerprint(t)))
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "comes after") {
		t.Fatalf("the revision-order case against a server whose frames come out of order: %v, want a failure on the order", res[0].Err)
	}
	t.Logf("FAIL (as it must): %v", res[0].Err)
}

// swapSets copies a watch stream line by line, holding back every other
// set frame after synced and sending it after the next line.
func swapSets(body io.ReadCloser) io.ReadCloser {
	synced := false
	var held []byte
	return rewriteLines(body, func(line []byte) []byte {
		switch {
		case bytes.Contains(line, []byte(`"type":"synced"`)):
			synced = true
		case synced && held == nil && bytes.Contains(line, []byte(`"type":"set"`)):
			held = line
			return nil
		case held != nil && len(line) > 0:
			line, held = append(line, held...), nil
		}
		return line
	})
}
