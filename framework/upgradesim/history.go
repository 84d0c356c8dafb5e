package upgradesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// A call's history is what the kit saw happen to it, in order: every
// attempt its client sent (to which replica and incarnation, at which
// path, and what came back) and every time a server processed or applied
// it. An applied-once violation prints the history of the call, or of
// every call that carried its idempotency key, so that a double apply
// can be traced without replaying it.

// maxHistory bounds the events a call's history keeps.
const maxHistory = 64

// callEvent is one entry of a call's history.
type callEvent struct {
	at   time.Duration
	text string
	// outcome is what an attempt got, filled in when it ends.
	outcome string
}

// String prints the event on a line of its own.
func (e *callEvent) String() string {
	s := fmt.Sprintf("    %8s %s", e.at.Round(time.Millisecond), e.text)
	if e.outcome != "" {
		s += ": " + e.outcome
	}
	return s
}

// String names an incarnation in histories: "nodecontroller#1 v2 (incarnation 7)".
func (inc *incarnation) String() string {
	if inc == nil {
		return "(none running)"
	}
	return fmt.Sprintf("%s %s (incarnation %d)", inc.r.name, inc.version.Name, inc.seq)
}

// noteLocked adds an event to rec's history.
func (c *Cluster) noteLocked(rec *callRecord, text string) *callEvent {
	ev := &callEvent{at: c.now(), text: text}
	if len(rec.history) < maxHistory {
		rec.history = append(rec.history, ev)
	}
	return ev
}

// noteAttempt records, in the history of each traffic call req carries,
// that from sent it to the incarnation to of replica dest; the returned
// func records what the attempt got.
func (c *Cluster) noteAttempt(req *http.Request, from *incarnation, dest *replica, to *incarnation) func(resp *http.Response, err error) {
	ids := attemptIDs(req)
	if len(ids) == 0 {
		return func(*http.Response, error) {}
	}
	where := "an unknown address " + req.URL.Host
	if dest != nil {
		where = to.String()
	}
	text := fmt.Sprintf("attempt from %s to %s at %s", from, where, req.URL.Path)
	if len(ids) > 1 || strings.HasSuffix(req.URL.Path, "/"+protocol.MultiCallMethod) {
		text += fmt.Sprintf(" (a multi-call of %d: %s)", len(ids), strings.Join(ids, " "))
	}
	c.mu.Lock()
	var evs []*callEvent
	for _, id := range ids {
		if rec := c.calls[id]; rec != nil {
			evs = append(evs, c.noteLocked(rec, text))
		}
	}
	c.mu.Unlock()
	began := time.Now()
	return func(resp *http.Response, err error) {
		out := answerText(resp, err) + " after " + time.Since(began).Round(time.Millisecond).String()
		c.mu.Lock()
		for _, ev := range evs {
			ev.outcome = out
		}
		c.mu.Unlock()
	}
}

// answerText says what an attempt got: a status and the protocol's
// headers that say what the server did, or the transport's error.
func answerText(resp *http.Response, err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	s := resp.Status
	if code := errorCode(resp); code != "" {
		s += " " + code
	}
	for _, h := range []string{protocol.HeaderNotProcessed, protocol.HeaderDraining, protocol.HeaderReplayed} {
		if resp.Header.Get(h) != "" {
			s += ", " + h
		}
	}
	return s
}

// errorCode returns the code of a short error answer, leaving its body
// to be read again.
func errorCode(resp *http.Response) string {
	if resp.StatusCode == http.StatusOK || resp.ContentLength <= 0 || resp.ContentLength > 4096 {
		return ""
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Code
}

// attemptIDs returns the traffic calls a request carries: its own, or the
// items' of a multi-call, which the framework keeps beside the request.
func attemptIDs(req *http.Request) []string {
	if id := req.Header.Get(HeaderCall); id != "" {
		return []string{id}
	}
	ids := framework.MultiCallItemHeaders(req, HeaderCall)
	tagged := ids[:0]
	for _, id := range ids {
		if id != "" {
			tagged = append(tagged, id)
		}
	}
	return tagged
}

// maxSessionLog bounds the session requests an incarnation's log keeps,
// the newest: at the test worlds' heartbeat rate (20 a second) 1,024 of
// them reach back 50 s, further than a call's timeout.
const maxSessionLog = 1024

// sessionLog is what one incarnation's clients did to keep their sessions:
// every handshake, heartbeat and session close they sent, to which
// replica, and what came back. An external-uninterrupted violation prints
// the part of it that the failed call overlapped, so that a session that
// lapsed, and how long it took to come back, can be read from one run.
type sessionLog struct {
	mu     sync.Mutex
	events []sessionEvent
	next   int // where the next event goes once events is full
}

type sessionEvent struct {
	at, took time.Duration
	text     string
}

// noteSession records, when req is a handshake, heartbeat or session
// close, that from sent it to dest; the returned func records what came
// back. Calls are left to their own histories (noteAttempt).
func (c *Cluster) noteSession(req *http.Request, from *incarnation, dest *replica, to *incarnation) func(resp *http.Response, err error) {
	var what string
	switch req.URL.Path {
	case protocol.PathHandshake:
		what = "handshake"
		if req.URL.RawQuery != "" {
			what += " ?" + req.URL.RawQuery
		}
	case protocol.PathHeartbeat:
		what = "heartbeat"
	case protocol.PathSession:
		what = "session close"
	default:
		return nil
	}
	where := "an unknown address " + req.URL.Host
	if dest != nil {
		where = to.String()
	}
	began := c.now()
	return func(resp *http.Response, err error) {
		out := answerText(resp, err)
		if err == nil && resp.StatusCode == http.StatusOK && what == "heartbeat" {
			out += lostText(resp)
		}
		from.sessions.add(sessionEvent{at: began, took: c.now() - began, text: what + " to " + where + ": " + out})
	}
}

// lostText says which sessions a heartbeat's answer reports lost, leaving
// its body to be read again.
func lostText(resp *http.Response) string {
	if resp.ContentLength <= 0 || resp.ContentLength > 4096 {
		return ""
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var ans struct {
		Lost []string `json:"lost"`
	}
	if err != nil || json.Unmarshal(body, &ans) != nil || len(ans.Lost) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d of its sessions lost", len(ans.Lost))
}

func (l *sessionLog) add(ev sessionEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) < maxSessionLog {
		l.events = append(l.events, ev)
		return
	}
	l.events[l.next] = ev
	l.next = (l.next + 1) % maxSessionLog
}

// text prints the events that began from from on, in order, a line each;
// heartbeats that renewed every session are summed up between the
// events around them, so a lapse stands out.
func (l *sessionLog) text(from time.Duration) string {
	l.mu.Lock()
	evs := append(append([]sessionEvent(nil), l.events[l.next:]...), l.events[:l.next]...)
	l.mu.Unlock()
	var b strings.Builder
	quiet, slowest := 0, time.Duration(0)
	flush := func() {
		if quiet > 0 {
			fmt.Fprintf(&b, "\n             (%d heartbeats answered 200, the slowest in %s)", quiet, slowest.Round(time.Millisecond))
			quiet, slowest = 0, 0
		}
	}
	for _, ev := range evs {
		if ev.at < from {
			continue
		}
		if strings.HasPrefix(ev.text, "heartbeat ") && strings.HasSuffix(ev.text, ": 200 OK") {
			quiet++
			slowest = max(slowest, ev.took)
			continue
		}
		flush()
		fmt.Fprintf(&b, "\n    %8s %s after %s", ev.at.Round(time.Millisecond), ev.text, ev.took.Round(time.Millisecond))
	}
	flush()
	return b.String()
}

// sessionLogs prints the session requests of every running replica's
// clients from from on, for a wait that did not hold.
func (c *Cluster) sessionLogs(from time.Duration) string {
	c.mu.Lock()
	var incs []*incarnation
	for _, r := range c.replicas {
		if r.inc != nil {
			incs = append(incs, r.inc)
		}
	}
	c.mu.Unlock()
	var b strings.Builder
	for _, inc := range incs {
		if text := inc.sessions.text(from); text != "" {
			fmt.Fprintf(&b, "\n  the session requests of %s from %s on:%s", inc, from.Round(time.Millisecond), text)
		}
	}
	return b.String()
}

// historyText prints rec's history, a line per event; c.mu must be held.
func historyText(rec *callRecord) string {
	var b strings.Builder
	for _, ev := range rec.history {
		b.WriteString("\n" + ev.String())
	}
	return b.String()
}

// doubleApply is an apply of a call (or of its idempotency key) beyond the
// first, reported once every call ended, with the history.
type doubleApply struct {
	rec   *callRecord
	item  string
	n     int
	by    *incarnation
	at    time.Duration
	step  int
	what  string
	calls []*callRecord // the calls whose histories it prints
}

// reportDoubles reports each double apply as an applied-once violation,
// with the history of every call involved.
func (c *Cluster) reportDoubles() {
	c.mu.Lock()
	doubles := c.doubles
	c.doubles = nil
	texts := make([]string, len(doubles))
	for i, d := range doubles {
		var b strings.Builder
		for _, rec := range d.calls {
			fmt.Fprintf(&b, "\n  history of call %s from %s", rec.id, rec.from)
			if rec.key != "" {
				fmt.Fprintf(&b, ", key %s", rec.key)
			}
			switch {
			case rec.acked:
				b.WriteString(", acknowledged")
			case rec.done:
				fmt.Fprintf(&b, ", failed: %v", rec.err)
			}
			b.WriteString(":" + historyText(rec))
		}
		texts[i] = b.String()
	}
	c.mu.Unlock()
	for i, d := range doubles {
		c.violateAtTime(d.step, d.at, InvariantAppliedOnce, "%s from %s was applied %d times; the last time by %s (%s), incarnation %d, at %s%s",
			d.what, d.rec.from.r.name, d.n, d.by.r.name, d.by.version.Name, d.by.seq, d.at.Round(time.Millisecond), texts[i])
	}
}
