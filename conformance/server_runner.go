package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Target is a server under test. Cases marked "fresh" (they drain the
// server) get a server of their own from Fresh.
type Target struct {
	// URL is the base URL of a running server, e.g. http://127.0.0.1:8080.
	URL string
	// Fresh starts a new server and returns its base URL and a function
	// that stops it. Nil: fresh cases are skipped.
	Fresh func() (url string, stop func(), err error)
}

// Result is the outcome of one case.
type Result struct {
	Case string
	// Err is nil for a pass.
	Err error
	// Skipped says why the case was not played, if it was not.
	Skipped string
}

// DefaultVars are the variables every case starts with: the contract's
// identity and fingerprint, and two client instance names new per case.
func DefaultVars(fingerprint string) Vars {
	return Vars{
		"contract": "conformance", "version": "1.0.0", "client": "conformance-client",
		"server": "conformance-server", "fingerprint": fingerprint,
	}
}

// RunServerCases plays server-side cases against target, one after the
// other, and returns one result per case.
func RunServerCases(ctx context.Context, target Target, cases []*Case, vars Vars) []Result {
	var results []Result
	for _, c := range cases {
		results = append(results, runServerCase(ctx, target, c, vars))
	}
	return results
}

func runServerCase(ctx context.Context, target Target, c *Case, base Vars) Result {
	res := Result{Case: c.Name}
	url := target.URL
	fresh := false
	for _, s := range c.Steps {
		if _, ok := s["fresh"]; ok {
			fresh = true
		}
	}
	if fresh {
		if target.Fresh == nil {
			res.Skipped = "needs a server of its own (it drains it)"
			return res
		}
		u, stop, err := target.Fresh()
		if err != nil {
			res.Err = fmt.Errorf("starting a server: %w", err)
			return res
		}
		defer stop()
		url = u
	}
	vars := Vars{}
	for k, v := range base {
		vars[k] = v
	}
	vars["instance"] = randomHex(8)
	vars["instance2"] = randomHex(8)
	p := &player{ctx: ctx, url: strings.TrimSuffix(url, "/"), vars: vars,
		streams: map[string]*stream{}, pending: map[string]chan answer{},
		// The timeout only bounds a hang: a case's own expectations carry
		// its timing. revision-order's burst (12,800 sets, four watchers
		// reading) took more than 30 s under the race detector on a 2-core
		// machine at load 35.
		client: &http.Client{Timeout: 2 * time.Minute}}
	defer p.closeAll()
	for i, s := range c.Steps {
		if err := p.step(s); err != nil {
			res.Err = fmt.Errorf("step %d (%s): %w", i+1, stepKind(s), err)
			return res
		}
	}
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// stepKinds are the step types a server-side case may use.
var stepKinds = []string{"fresh", "pause", "keepalive", "handshake", "request", "until", "async", "await", "watch", "frames", "ascending", "end", "close"}

func stepKind(s map[string]any) string {
	for _, k := range stepKinds {
		if _, ok := s[k]; ok {
			return k
		}
	}
	return "unknown"
}

type player struct {
	ctx     context.Context
	url     string
	vars    Vars
	client  *http.Client
	streams map[string]*stream
	pending map[string]chan answer
	stops   []func() // background steps to stop at the case's end
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// stream is an open watch stream: its frames, read line by line as they
// come, whether or not a step has asked for them yet. A server may cut a
// watcher that stops reading (its writes time out), so the runner reads
// every stream all along, as a client's informer does, however long a
// step spends on another stream.
type stream struct {
	body io.Closer
	more chan struct{} // a frame was queued or the stream ended

	mu          sync.Mutex
	queue       []queuedFrame // decoded frames not taken yet
	queuedBytes int           // the lines they were read from
	ended       bool
	endErr      error // why it ended, once ended
}

// queuedFrame is a decoded frame and the bytes of its line.
type queuedFrame struct {
	frame any
	size  int
}

// A stream holds at most maxQueuedFrames frames, of maxQueuedBytes
// together, for the steps to take, and reads no frame line longer than
// maxFrameBytes: a server that sends more than a case reads, or a line
// without end, is failed, not held in memory without end.
const (
	maxQueuedFrames = 1 << 20
	maxQueuedBytes  = 256 << 20
	maxFrameBytes   = 4 << 20
)

func newStream(body io.ReadCloser) *stream {
	st := &stream{body: body, more: make(chan struct{}, 1)}
	go func() {
		r := bufio.NewReader(body)
		for {
			line, err := readLine(r, maxFrameBytes)
			if len(line) > 0 {
				var f any
				if jerr := json.Unmarshal(line, &f); jerr != nil {
					st.end(fmt.Errorf("frame is not JSON: %.200q", line))
					return
				}
				if !st.push(f, len(line)) {
					st.end(fmt.Errorf("more than %d frames or %d bytes unread", maxQueuedFrames, maxQueuedBytes))
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				st.end(err)
				return
			}
		}
	}()
	return st
}

// readLine reads r up to and including its next newline, failing a line
// longer than limit; at the end of r it returns what is left and io.EOF.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > limit {
			return nil, fmt.Errorf("a frame line longer than %d bytes", limit)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func (st *stream) push(f any, size int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.queue) >= maxQueuedFrames || st.queuedBytes+size > maxQueuedBytes {
		return false
	}
	st.queue = append(st.queue, queuedFrame{f, size})
	st.queuedBytes += size
	st.signal()
	return true
}

func (st *stream) end(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended, st.endErr = true, err
	st.signal()
}

// signal wakes a step waiting in take; st.mu is held.
func (st *stream) signal() {
	select {
	case st.more <- struct{}{}:
	default:
	}
}

// take returns the stream's next frame; ok is false once the stream ended
// with nothing left to take, err says why it ended (nil at EOF). It waits
// until deadline fires.
func (st *stream) take(deadline <-chan time.Time) (frame any, ok bool, err error) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			q := st.queue[0]
			st.queue[0] = queuedFrame{}
			st.queue = st.queue[1:]
			st.queuedBytes -= q.size
			st.mu.Unlock()
			return q.frame, true, nil
		}
		if st.ended {
			err = st.endErr
			st.mu.Unlock()
			return nil, false, err
		}
		st.mu.Unlock()
		select {
		case <-st.more:
		case <-deadline:
			return nil, false, errTakeTimeout
		}
	}
}

// errTakeTimeout is take's error when its deadline fired first.
var errTakeTimeout = errors.New("deadline")

func (p *player) closeAll() {
	for _, stop := range p.stops {
		stop()
	}
	for _, s := range p.streams {
		s.body.Close()
	}
	for name, ch := range p.pending {
		<-ch
		delete(p.pending, name)
	}
}

func (p *player) step(s map[string]any) error {
	switch kind := stepKind(s); kind {
	case "fresh":
		return nil
	case "keepalive":
		// Heartbeats the session in the background, every "every" (a
		// duration, usually the welcome's $heartbeat), until the case ends:
		// for cases that wait longer than a TTL on something other than
		// calls, such as pings.
		x, err := p.vars.expand(s["keepalive"])
		if err != nil {
			return err
		}
		k := asMap(x)
		every, err := time.ParseDuration(fmt.Sprint(k["every"]))
		if err != nil || every <= 0 {
			return fmt.Errorf("keepalive: every %v is not a duration", k["every"])
		}
		token := fmt.Sprint(k["session"])
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-p.ctx.Done():
					return
				case <-t.C:
					p.send(p.requestWith(Vars{}, map[string]any{"path": "/lockstep/heartbeat", "body": map[string]any{"sessions": []any{token}}}))
				}
			}
		}()
		p.stops = append(p.stops, func() { close(stop); <-done })
		return nil
	case "pause":
		// Waits for the sum of the durations listed (Go duration strings,
		// usually the welcome's ttl and heartbeat): only for what needs time
		// to pass on the server, such as a session lapsing.
		x, err := p.vars.expand(s["pause"])
		if err != nil {
			return err
		}
		list, _ := x.([]any)
		var total time.Duration
		for _, d := range list {
			dd, err := time.ParseDuration(fmt.Sprint(d))
			if err != nil {
				return fmt.Errorf("pause: %v", err)
			}
			total += dd
		}
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-time.After(total):
			return nil
		}
	case "handshake":
		return p.handshake(asMap(s["handshake"]))
	case "request":
		req := asMap(s["request"])
		a := p.do(req)
		return p.check(asMap(req["expect"]), a)
	case "until":
		req := asMap(s["until"])
		within := 10 * time.Second
		if w, ok := req["within"].(string); ok {
			d, err := time.ParseDuration(w)
			if err != nil {
				return err
			}
			within = d
		}
		deadline := time.Now().Add(within)
		for {
			snapshot := p.vars.clone()
			err := p.check(asMap(req["expect"]), p.do(req))
			if err == nil {
				return nil
			}
			p.vars = snapshot
			if time.Now().After(deadline) {
				return fmt.Errorf("not within %s: %w", within, err)
			}
			select {
			case <-p.ctx.Done():
				return p.ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	case "async":
		req := asMap(s["async"])
		name, _ := req["name"].(string)
		ch := make(chan answer, 1)
		p.pending[name] = ch
		hr, err := p.request(req)
		go func() { ch <- p.send(hr, err) }()
		return nil
	case "await":
		req := asMap(s["await"])
		name, _ := req["name"].(string)
		ch, ok := p.pending[name]
		if !ok {
			return fmt.Errorf("no request %q is pending", name)
		}
		delete(p.pending, name)
		select {
		case a := <-ch:
			return p.check(asMap(req["expect"]), a)
		case <-time.After(20 * time.Second):
			return fmt.Errorf("request %q was not answered within 20s", name)
		}
	case "watch":
		return p.watch(asMap(s["watch"]))
	case "frames":
		return p.frames(asMap(s["frames"]))
	case "ascending":
		return p.ascending(asMap(s["ascending"]))
	case "end":
		return p.end(asMap(s["end"]))
	case "close":
		name, _ := asMap(s["close"])["stream"].(string)
		st, ok := p.streams[name]
		if !ok {
			return fmt.Errorf("no stream %q", name)
		}
		st.body.Close()
		delete(p.streams, name)
		return nil
	default:
		return fmt.Errorf("unknown step %s", show(s))
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// handshake sends the standard hello of the conformance client (fields
// given in the step replace the standard ones) and, unless the step
// expects otherwise, requires a welcome and captures its session.
func (p *player) handshake(h map[string]any) error {
	hello := map[string]any{
		"contract": "$contract", "component": "$client", "instance": "$instance", "release": "1.0.0",
		"offers": []any{map[string]any{"version": "$version", "fingerprint": "$fingerprint"}},
	}
	for k, v := range h {
		switch k {
		case "as", "query", "expect", "header":
			continue
		}
		hello[k] = v
	}
	for k, v := range h {
		if v == "$absent" {
			delete(hello, k)
		}
	}
	path := "/lockstep/handshake"
	if q, ok := h["query"].(string); ok {
		path += "?" + q
	}
	expect := asMap(h["expect"])
	if len(expect) == 0 {
		as, _ := h["as"].(string)
		if as == "" {
			as = "session"
		}
		expect = map[string]any{"status": float64(200), "body": map[string]any{"session": "$" + as + "=", "version": "$version", "fingerprint": "$fingerprint"}}
	}
	a := p.do(map[string]any{"method": "POST", "path": path, "body": hello, "headers": h["header"]})
	return p.check(expect, a)
}

// do sends one request of a step: method (default POST), path, headers,
// and a JSON body (or raw text).
func (p *player) do(req map[string]any) answer {
	return p.send(p.request(req))
}

// request builds the HTTP request of a request step, its variables
// expanded now: an async step's request is sent by another goroutine
// while later steps capture variables.
func (p *player) request(req map[string]any) (*http.Request, error) {
	return p.requestWith(p.vars, req)
}

// requestWith is request with the variables vars: a goroutine of its own
// (keepalive's) must not read the case's, which steps replace and add to.
func (p *player) requestWith(vars Vars, req map[string]any) (*http.Request, error) {
	plain := make(map[string]any, len(req))
	for k, v := range req {
		if k != "expect" {
			plain[k] = v
		}
	}
	x, err := vars.expand(plain)
	if err != nil {
		return nil, err
	}
	req = x.(map[string]any)
	method, _ := req["method"].(string)
	if method == "" {
		method = "POST"
	}
	path, _ := req["path"].(string)
	var body io.Reader
	if raw, ok := req["raw"].(string); ok {
		body = strings.NewReader(raw)
	} else if b, ok := req["body"]; ok {
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	hr, err := http.NewRequestWithContext(p.ctx, method, p.url+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range asMap(req["headers"]) {
		hr.Header.Set(k, fmt.Sprint(v))
	}
	return hr, nil
}

// send sends a request built by request (or returns the error building it
// met) and reads its answer.
func (p *player) send(hr *http.Request, err error) answer {
	if err != nil {
		return answer{err: err}
	}
	resp, err := p.client.Do(hr)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: withConnection(resp), body: data, err: err}
}

// withConnection puts back the Connection header that net/http's client
// takes out of an answer's header (it reports it as Response.Close).
func withConnection(resp *http.Response) http.Header {
	h := resp.Header
	if resp.Close && h.Get("Connection") == "" {
		h = h.Clone()
		h.Set("Connection", "close")
	}
	return h
}

// check compares an answer with a step's expect: status, headers (a
// header expected "$absent" must be missing) and body.
func (p *player) check(expect map[string]any, a answer) error {
	if a.err != nil {
		return a.err
	}
	if st, ok := expect["status"].(float64); ok && int(st) != a.status {
		return fmt.Errorf("status %d, want %d (body %s)", a.status, int(st), truncate(a.body))
	}
	for k, v := range asMap(expect["headers"]) {
		got := a.header.Values(k)
		if v == "$absent" {
			if len(got) > 0 {
				return fmt.Errorf("header %s: %q, want none", k, got)
			}
			continue
		}
		if len(got) == 0 {
			return fmt.Errorf("header %s missing (want %v)", k, v)
		}
		if err := p.vars.match(v, got[0], "header "+k); err != nil {
			return err
		}
	}
	if want, ok := expect["body"]; ok {
		var body any
		if err := json.Unmarshal(a.body, &body); err != nil {
			return fmt.Errorf("body is not JSON: %s", truncate(a.body))
		}
		if err := p.vars.match(want, body, "body"); err != nil {
			return err
		}
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// watch opens a watch stream and checks its answer's status and headers.
func (p *player) watch(w map[string]any) error {
	x, err := p.vars.expand(w)
	if err != nil {
		return err
	}
	w = x.(map[string]any)
	name, _ := w["stream"].(string)
	path, _ := w["path"].(string)
	hr, err := http.NewRequestWithContext(p.ctx, "GET", p.url+path, nil)
	if err != nil {
		return err
	}
	for k, v := range asMap(w["headers"]) {
		hr.Header.Set(k, fmt.Sprint(v))
	}
	resp, err := (&http.Client{}).Do(hr)
	if err != nil {
		return err
	}
	expect := asMap(w["expect"])
	if _, ok := expect["status"]; !ok {
		expect["status"] = float64(200)
	}
	if resp.StatusCode != 200 || expect["status"] != float64(200) {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return p.check(expect, answer{status: resp.StatusCode, header: resp.Header, body: data})
	}
	if err := p.check(map[string]any{"headers": expect["headers"]}, answer{status: 200, header: resp.Header}); err != nil {
		resp.Body.Close()
		return err
	}
	st := newStream(resp.Body)
	p.streams[name] = st
	return nil
}

// frames reads a stream's next frames and matches them against the
// expected list. An element {anyOrder: [...]} matches that many frames in
// any order. Ping frames are skipped unless a ping is expected next.
func (p *player) frames(f map[string]any) error {
	name, _ := f["stream"].(string)
	st, ok := p.streams[name]
	if !ok {
		return fmt.Errorf("no stream %q", name)
	}
	timeout, err := p.within(f)
	if err != nil {
		return err
	}
	next := st.reader(timeout)
	expect, _ := f["expect"].([]any)
	for i, e := range expect {
		if group, ok := asMap(e)["anyOrder"].([]any); ok {
			left := append([]any(nil), group...)
			for len(left) > 0 {
				fr, err := next(false)
				if err != nil {
					return fmt.Errorf("frame %d: %w", i+1, err)
				}
				found := -1
				for j, w := range left {
					trial := p.vars.clone()
					if trial.match(w, fr, "frame") == nil {
						found = j
						p.vars = trial
						break
					}
				}
				if found < 0 {
					return fmt.Errorf("frame %d: %s matches none of %s", i+1, show(fr), show(left))
				}
				left = append(left[:found], left[found+1:]...)
			}
			continue
		}
		wantPing := asMap(e)["type"] == "ping"
		fr, err := next(wantPing)
		if err != nil {
			return fmt.Errorf("frame %d (want %s): %w", i+1, show(e), err)
		}
		if err := p.vars.match(e, fr, "frame"); err != nil {
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
	}
	return nil
}

// within is how long a step that reads frames waits for them: its
// "within", a duration or a list of them (usually the welcome's, e.g.
// [$ttl]) summed and multiplied by "scale"; 10 s when it has none.
func (p *player) within(f map[string]any) (time.Duration, error) {
	switch t := f["within"].(type) {
	case string:
		return time.ParseDuration(t)
	case []any:
		x, err := p.vars.expand(t)
		if err != nil {
			return 0, err
		}
		var total time.Duration
		for _, e := range x.([]any) {
			d, err := time.ParseDuration(fmt.Sprint(e))
			if err != nil {
				return 0, fmt.Errorf("within: %v", err)
			}
			total += d
		}
		if scale, ok := f["scale"].(float64); ok {
			total = time.Duration(float64(total) * scale)
		}
		return total, nil
	}
	return 10 * time.Second, nil
}

// reader returns a function that reads the stream's next frame, skipping
// pings unless wantPing, and fails once timeout has passed from now.
func (st *stream) reader(timeout time.Duration) func(wantPing bool) (any, error) {
	deadline := time.After(timeout)
	return func(wantPing bool) (any, error) {
		for {
			fr, ok, err := st.take(deadline)
			switch {
			case errors.Is(err, errTakeTimeout):
				return nil, fmt.Errorf("no frame within %s", timeout)
			case err != nil:
				return nil, fmt.Errorf("stream ended: %w", err)
			case !ok:
				return nil, errors.New("stream ended")
			}
			if m, _ := fr.(map[string]any); m["type"] == "ping" && !wantPing {
				continue
			}
			return fr, nil
		}
	}
}

// ascending reads a stream's frames, pings aside, up to and including the
// first that matches "until", and requires each one's number "field" to
// be greater than the frame's before it: the revision order the protocol
// promises after synced, whatever the frames are. "keys", if given, is
// how many keys the frames before the until frame must name, and "each",
// if given, must match every key's last frame among them: the state the
// watcher was brought to.
func (p *player) ascending(a map[string]any) error {
	name, _ := a["stream"].(string)
	st, ok := p.streams[name]
	if !ok {
		return fmt.Errorf("no stream %q", name)
	}
	field, _ := a["field"].(string)
	if field == "" {
		return errors.New("ascending: no field to compare")
	}
	timeout, err := p.within(a)
	if err != nil {
		return err
	}
	next := st.reader(timeout)
	last := map[string]any{} // each key's last frame before the until frame
	var prev float64
	for n := 1; ; n++ {
		fr, err := next(false)
		if err != nil {
			return fmt.Errorf("frame %d (%d keys so far): %w", n, len(last), err)
		}
		m, _ := fr.(map[string]any)
		v, ok := m[field].(float64)
		if !ok {
			return fmt.Errorf("frame %d has no number %q: %s", n, field, show(fr))
		}
		if n > 1 && v <= prev {
			return fmt.Errorf("frame %d: %s %v comes after %v: %s", n, field, v, prev, show(fr))
		}
		prev = v
		if trial := p.vars.clone(); trial.match(a["until"], fr, "frame") == nil {
			p.vars = trial
			break
		}
		if k, ok := m["key"].(string); ok {
			last[k] = fr
		}
	}
	if want, ok := a["keys"].(float64); ok && len(last) != int(want) {
		return fmt.Errorf("the frames before the last named %d keys, want %d", len(last), int(want))
	}
	if each, ok := a["each"]; ok {
		keys := make([]string, 0, len(last))
		for k := range last {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := p.vars.match(each, last[k], "last frame of "+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// end requires the stream to end (pings aside) within the step's time.
func (p *player) end(e map[string]any) error {
	name, _ := e["stream"].(string)
	st, ok := p.streams[name]
	if !ok {
		return fmt.Errorf("no stream %q", name)
	}
	deadline := time.After(10 * time.Second)
	for {
		fr, ok, err := st.take(deadline)
		switch {
		case errors.Is(err, errTakeTimeout):
			return errors.New("the stream did not end within 10s")
		case err != nil:
			// Cut (a reset, a body that stopped short), a frame that is
			// not JSON, or more than the runner holds: not an end.
			return fmt.Errorf("the stream broke instead of ending: %w", err)
		case !ok:
			delete(p.streams, name)
			st.body.Close()
			return nil
		}
		if m, _ := fr.(map[string]any); m["type"] == "ping" {
			continue
		}
		return fmt.Errorf("want the stream's end, got %s", show(fr))
	}
}
