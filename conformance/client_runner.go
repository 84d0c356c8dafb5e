package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A ClientUnderTest plays one scenario of a client-side case (see
// cases/README.md) against the scripted server at baseURL and returns the
// JSON object it reports.
type ClientUnderTest func(ctx context.Context, scenario, baseURL string) (map[string]any, error)

// CommandClient is a client under test run as a program: command args...
// <scenario> <base URL>; its report is the last line of its standard
// output, a JSON object.
func CommandClient(command string, args ...string) ClientUnderTest {
	return func(ctx context.Context, scenario, baseURL string) (map[string]any, error) {
		cmd := exec.CommandContext(ctx, command, append(append([]string(nil), args...), scenario, baseURL)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		last := lines[len(lines)-1]
		var out map[string]any
		if jerr := json.Unmarshal([]byte(last), &out); jerr != nil {
			return nil, fmt.Errorf("the client reported %q, not a JSON object (run: %v; stderr: %s)", last, err, truncate(stderr.Bytes()))
		}
		if err != nil {
			return out, fmt.Errorf("the client exited with %v (stderr: %s)", err, truncate(stderr.Bytes()))
		}
		return out, nil
	}
}

// RunClientCases plays client-side cases: for each, a scripted server on
// 127.0.0.1 answers what the case's script says, the client under test
// plays the case's scenario against it, and the case passes when every
// scripted exchange happened in order, nothing else was asked (heartbeats
// aside, which are answered as a server would), and the client reported
// what the case expects.
func RunClientCases(ctx context.Context, client ClientUnderTest, cases []*Case, vars Vars) []Result {
	var results []Result
	for _, c := range cases {
		results = append(results, runClientCase(ctx, client, c, vars))
	}
	return results
}

func runClientCase(ctx context.Context, client ClientUnderTest, c *Case, base Vars) Result {
	res := Result{Case: c.Name}
	vars := Vars{}
	for k, v := range base {
		vars[k] = v
	}
	vars["server_instance"] = randomHex(8)
	s := &scripted{script: c.Script, vars: vars, done: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		res.Err = err
		return res
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	out, cerr := client(cctx, c.Scenario, "http://"+l.Addr().String())
	cancel()
	s.finish()
	_ = srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.problems) > 0:
		res.Err = errors.New(strings.Join(s.problems, "; "))
	case cerr != nil:
		res.Err = cerr
	case s.next < len(s.script) && !s.restOptional():
		res.Err = fmt.Errorf("the client stopped before exchange %d: %s", s.next+1, show(s.script[s.next]["request"]))
	default:
		if err := vars.match(c.Expect, out, "report"); err != nil {
			res.Err = err
		}
	}
	return res
}

// scripted is the scripted server of one client-side case.
type scripted struct {
	mu       sync.Mutex
	script   []map[string]any
	next     int
	repeats  []map[string]any // answered exchanges marked repeat: true
	vars     Vars
	problems []string
	done     chan struct{}
	once     sync.Once
}

func (s *scripted) finish() { s.once.Do(func() { close(s.done) }) }

// restOptional reports whether every exchange not played yet is optional.
func (s *scripted) restOptional() bool {
	for _, e := range s.script[s.next:] {
		if e["optional"] != true {
			return false
		}
	}
	return true
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	exchange, err := s.pick(r, body)
	if err != nil {
		s.problems = append(s.problems, err.Error())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code":"internal","message":"the scripted server did not expect this request"}`))
		return
	}
	answer, aerr := s.vars.expand(exchange["answer"])
	s.mu.Unlock()
	if aerr != nil {
		s.fail(aerr.Error())
		return
	}
	s.answer(w, asMap(answer))
}

func (s *scripted) fail(msg string) {
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
}

// pick returns the exchange a request plays: the next in the script, else
// one marked repeat that was played already, else (for a heartbeat) an
// answer that renews every session named.
func (s *scripted) pick(r *http.Request, body []byte) (map[string]any, error) {
	var parsed any
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &parsed); err != nil {
			parsed = string(body)
		}
	}
	matches := func(e map[string]any) error {
		want := asMap(e["request"])
		method, _ := want["method"].(string)
		if method == "" {
			method = "POST"
		}
		if r.Method != method {
			return fmt.Errorf("%s %s, want %s %v", r.Method, r.URL.Path, method, want["path"])
		}
		if p, _ := want["path"].(string); p != r.URL.Path {
			return fmt.Errorf("%s %s, want %s %s", r.Method, r.URL.Path, method, p)
		}
		trial := Vars{}
		for k, v := range s.vars {
			trial[k] = v
		}
		for k, v := range asMap(want["headers"]) {
			got := r.Header.Get(k)
			if v == "$absent" {
				if got != "" {
					return fmt.Errorf("%s %s: header %s is %q, want none", r.Method, r.URL.Path, k, got)
				}
				continue
			}
			if got == "" {
				return fmt.Errorf("%s %s: header %s missing", r.Method, r.URL.Path, k)
			}
			if err := trial.match(v, got, "header "+k); err != nil {
				return fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, err)
			}
		}
		if b, ok := want["body"]; ok {
			if err := trial.match(b, parsed, "body"); err != nil {
				return fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, err)
			}
		}
		for k, v := range trial {
			s.vars[k] = v
		}
		return nil
	}
	if s.next < len(s.script) {
		e := s.script[s.next]
		err := matches(e)
		if err == nil {
			s.next++
			if e["repeat"] == true {
				s.repeats = append(s.repeats, e)
			}
			return e, nil
		}
		for _, rep := range s.repeats {
			if matches(rep) == nil {
				return rep, nil
			}
		}
		if r.URL.Path == "/lockstep/heartbeat" {
			return s.heartbeat(parsed, r), nil
		}
		// An optional exchange the client skipped: try the ones after it.
		for i := s.next; i < len(s.script) && s.script[i]["optional"] == true; i++ {
			if i+1 < len(s.script) && matches(s.script[i+1]) == nil {
				s.next = i + 2
				return s.script[i+1], nil
			}
		}
		return nil, fmt.Errorf("unexpected request (exchange %d): %v", s.next+1, err)
	}
	for _, rep := range s.repeats {
		if matches(rep) == nil {
			return rep, nil
		}
	}
	if r.URL.Path == "/lockstep/heartbeat" {
		return s.heartbeat(parsed, r), nil
	}
	return nil, fmt.Errorf("unexpected request after the script's end: %s %s %s", r.Method, r.URL.Path, truncate(body))
}

// heartbeat answers a heartbeat the script does not list: nothing lost,
// nothing to resync.
func (s *scripted) heartbeat(_ any, _ *http.Request) map[string]any {
	return map[string]any{"answer": map[string]any{"status": float64(200), "body": map[string]any{"lost": []any{}, "resync": []any{}}}}
}

// answer writes a scripted answer: status, headers, and a JSON body, or a
// watch stream of frames that then ends as "end" says: "close" (the
// stream ends), "break" (the connection is cut mid-stream) or "hold" (it
// stays open until the case ends).
func (s *scripted) answer(w http.ResponseWriter, a map[string]any) {
	for k, v := range asMap(a["headers"]) {
		w.Header().Set(k, fmt.Sprint(v))
	}
	status := http.StatusOK
	if st, ok := a["status"].(float64); ok {
		status = int(st)
	}
	frames, isStream := a["frames"].([]any)
	if !isStream {
		if b, ok := a["body"]; ok {
			data, _ := json.Marshal(b)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(data)
			return
		}
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(status)
	bw := bufio.NewWriter(w)
	for _, f := range frames {
		data, _ := json.Marshal(f)
		_, _ = bw.Write(append(data, '\n'))
	}
	_ = bw.Flush()
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	switch a["end"] {
	case "break":
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
	case "hold":
		<-s.done
	}
}
