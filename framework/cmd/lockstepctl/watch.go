package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// smallAnswer bounds the answers a watch reads besides its status and
// welcome: heartbeats' and the session close's.
const smallAnswer = 64 << 10

// closeTimeout bounds the session close on the way out, so that an
// interrupted watch ends promptly even when the server does not answer.
const closeTimeout = time.Second

// watchArgs are watch's flags and arguments.
type watchArgs struct {
	conn                         connFlags
	contract, ver, release, file string
	sel                          selection
	topic                        string
}

func runWatch(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	var w watchArgs
	w.conn.register(fs)
	fs.StringVar(&w.contract, "contract", "", "the topic's contract, when several contracts have a topic of that name")
	fs.StringVar(&w.ver, "version", "", "the contract version to watch at (default: the highest served)")
	fs.StringVar(&w.release, "release", "", "the client release to watch as (checked against the server's release constraint)")
	fs.StringVar(&w.file, "contract-file", "", "the contract file of the topic (as check's): its contract, version, client and fingerprint are used, and the server's status is not read")
	fs.Var(&w.sel, "select", "FIELD=VALUE: only the objects whose selector FIELD holds VALUE (repeatable; every one must match; the topic's selectors are in its contract)")
	pos, err := parse(fs, args, "URL", "TOPIC")
	if err != nil {
		return err
	}
	w.topic = pos[1]
	srv, err := w.conn.connect(pos[0])
	if err != nil {
		return err
	}
	setup, cancelSetup := context.WithTimeout(ctx, w.conn.timeout)
	defer cancelSetup()
	served, st, err := w.resolve(setup, srv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	header := http.Header{}
	behalf := w.conn.identity != nil && w.conn.identity.Component != served.Client
	if behalf {
		// Another identity than the contract's client (an operator's)
		// watches on behalf of the client component, without a session:
		// see headerOnBehalfOf.
		header.Set(headerOnBehalfOf, served.Client)
	} else {
		token, closeSession, err := openSession(ctx, setup, srv, served, w.release)
		if err != nil {
			return err
		}
		defer closeSession()
		header.Set(protocol.HeaderSession, token)
	}
	resp, err := w.open(ctx, srv, served, header)
	if err != nil {
		if behalf && errors.As(err, new(*serverError)) {
			return fmt.Errorf("%w: the server does not accept a watch on behalf of %s from %s (a server that predates it, or an identity it does not take for an operator); watch with a %s certificate",
				err, cell(served.Client), w.conn.identity, cell(served.Client))
		}
		return err
	}
	defer resp.Body.Close()
	where, at := "", srv.base
	if len(w.sel) > 0 {
		where = " where " + w.sel.String()
	}
	if st.Component != "" {
		at += " (" + cell(st.Component) + ")"
	}
	fmt.Fprintf(stdout, "# watching %s %s %s%s at %s\n", cell(served.Contract), cell(served.Version), w.topic, where, at)
	return printFrames(ctx, stdout, resp.Body, w.conn.maxBytes)
}

// resolve finds the served version the topic is watched at: from the
// contract file, which says all a watch needs (the status, which under
// mutual TLS is an operator's, is then not read), or from the server's
// status, which it returns too.
func (w *watchArgs) resolve(ctx context.Context, srv server) (framework.ServedVersion, framework.ServerStatus, error) {
	var st framework.ServerStatus
	if w.file != "" {
		served, err := servedFromFile(w.file, w.topic, w.contract, w.ver, w.sel)
		return served, st, err
	}
	st, err := fetchStatus(ctx, srv)
	if err != nil {
		if w.conn.identity != nil && codeOf(err) == "permission_denied" {
			err = fmt.Errorf("%w: the status is an operator's; give --contract-file to watch without it", err)
		}
		return framework.ServedVersion{}, st, err
	}
	served, err := pickTopic(st, w.topic, w.contract, w.ver)
	if err != nil {
		return served, st, err
	}
	return served, st, w.sel.check(st, served, w.topic)
}

// openSession handshakes as the contract's client, under an instance of
// its own (a watch needs a session), within setup; it keeps the session
// alive with heartbeats until ctx ends, and returns its token and the func
// that closes it, so the server does not wait for it to lapse.
func openSession(ctx, setup context.Context, srv server, served framework.ServedVersion, release string) (string, func(), error) {
	hello := handshake.Hello{Contract: served.Contract, Component: served.Client, Instance: "lockstepctl-watch-" + randomHex(6),
		Release: release, Offers: []handshake.Offer{{Version: served.Version, Fingerprint: served.Fingerprint}}}
	a, err := srv.do(setup, http.MethodPost, protocol.PathHandshake, nil, hello)
	if err != nil {
		return "", nil, err
	}
	if a.status != http.StatusOK {
		return "", nil, errorOf(a, "handshake")
	}
	var welcome handshake.Welcome
	if err := json.Unmarshal(a.body, &welcome); err != nil {
		return "", nil, fmt.Errorf("welcome did not decode: %w", err)
	}
	session := http.Header{protocol.HeaderSession: {welcome.Session}}
	closeSession := func() {
		c, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_, _ = srv.bounded(smallAnswer).do(c, http.MethodDelete, protocol.PathSession, session, nil)
	}
	go heartbeat(ctx, srv.bounded(smallAnswer), welcome)
	return welcome.Session, closeSession, nil
}

// open sends the watch request and returns its answer, whose body is the
// stream; an answer other than 200 is a *serverError.
func (w *watchArgs) open(ctx context.Context, srv server, served framework.ServedVersion, header http.Header) (*http.Response, error) {
	watchURL := srv.base + protocol.WatchPath(served.Contract, served.Version, w.topic)
	if len(w.sel) > 0 {
		watchURL += "?" + w.sel.query()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, errorOf(answer{status: resp.StatusCode, body: b}, "watch")
	}
	return resp, nil
}

// printFrames prints the stream's frames, one a line, until its closing
// frame, or until ctx ends (interrupted: the usual way to stop watching);
// a frame over maxBytes is an error.
func printFrames(ctx context.Context, stdout io.Writer, body io.Reader, maxBytes int64) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), int(min(maxBytes, 1<<30)))
	for sc.Scan() {
		line, end := formatFrame(sc.Bytes())
		if line != "" {
			fmt.Fprintln(stdout, line)
		}
		if end {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("watch stream: %w: a frame over --max-bytes %d", errTooLarge, maxBytes)
		}
		return fmt.Errorf("watch stream: %w", err)
	}
	return fmt.Errorf("watch stream ended without a closing frame")
}

// selection is watch's --select flags: the topic's selector fields and the
// value each must hold (docs/topics.md, Selections), sent as the watch's
// query (docs/protocol.md).
type selection []selector

type selector struct{ field, value string }

// Set parses one FIELD=VALUE.
func (s *selection) Set(v string) error {
	field, value, ok := strings.Cut(v, "=")
	if !ok || field == "" {
		return fmt.Errorf("%q: want FIELD=VALUE, e.g. nodeName=node-1", v)
	}
	if field == protocol.QuerySince {
		return fmt.Errorf("%q: %s is the resume point, not a selector", v, field)
	}
	for _, have := range *s {
		if have.field == field {
			return fmt.Errorf("%q: %s is selected twice", v, field)
		}
	}
	*s = append(*s, selector{field, value})
	return nil
}

// String returns the selection as given, FIELD=VALUE joined by commas.
func (s selection) String() string {
	parts := make([]string, len(s))
	for i, sel := range s {
		parts[i] = sel.field + "=" + sel.value
	}
	return strings.Join(parts, ",")
}

// query returns the selection as a watch's query.
func (s selection) query() string {
	q := url.Values{}
	for _, sel := range s {
		q.Set(sel.field, sel.value)
	}
	return q.Encode()
}

// check refuses, before any handshake, a field the server's status says
// the topic does not select on; a server whose status lists no selectors
// is left to refuse it itself (invalid_argument).
func (s selection) check(st framework.ServerStatus, served framework.ServedVersion, topic string) error {
	if len(s) == 0 {
		return nil
	}
	for _, t := range st.Topics {
		if t.Contract != served.Contract || t.Version != served.Version || t.Topic != topic || len(t.Selectors) == 0 {
			continue
		}
		for _, sel := range s {
			if !slices.Contains(t.Selectors, sel.field) {
				return usageError("--select %s: %s selects on %s only", cell(sel.field), topic, cell(strings.Join(t.Selectors, ", ")))
			}
		}
	}
	return nil
}

// servedFromFile is what a contract file says of the version a topic is
// watched at.
func servedFromFile(file, topic, contract, ver string, sel selection) (framework.ServedVersion, error) {
	m, err := readContractFile(file)
	if err != nil {
		return framework.ServedVersion{}, err
	}
	if (contract != "" && contract != m.Name) || (ver != "" && ver != m.Version) {
		return framework.ServedVersion{}, fmt.Errorf("--contract-file %s is %s %s, not %s %s", file, m.Name, m.Version, contract, ver)
	}
	t, ok := m.Topics[topic]
	if !ok {
		return framework.ServedVersion{}, fmt.Errorf("--contract-file %s declares no topic %s", file, topic)
	}
	for _, s := range sel {
		if !slices.Contains(t.Selectors, s.field) {
			return framework.ServedVersion{}, usageError("--select %s: %s selects on %s only", cell(s.field), topic, cell(strings.Join(t.Selectors, ", ")))
		}
	}
	fp, err := handshake.Fingerprint(&m)
	if err != nil {
		return framework.ServedVersion{}, fmt.Errorf("--contract-file %s: %w", file, err)
	}
	return framework.ServedVersion{Contract: m.Name, Version: m.Version, Fingerprint: fp, Client: m.Client}, nil
}

// pickTopic finds the served version a topic is watched at.
func pickTopic(st framework.ServerStatus, topic, contract, ver string) (framework.ServedVersion, error) {
	var found []framework.ServedVersion
	for _, t := range st.Topics {
		if t.Topic != topic || (contract != "" && t.Contract != contract) || (ver != "" && t.Version != ver) {
			continue
		}
		for _, v := range st.Served {
			if v.Contract == t.Contract && v.Version == t.Version {
				found = append(found, v)
			}
		}
	}
	if len(found) == 0 {
		var have []string
		for _, t := range st.Topics {
			have = append(have, cell(t.Contract)+" "+cell(t.Version)+" "+cell(t.Topic))
		}
		if len(have) == 0 {
			have = []string{"none"}
		}
		return framework.ServedVersion{}, fmt.Errorf("%s holds no topic %s matching (its topics: %s)", cell(st.Component), topic, text(strings.Join(have, ", ")))
	}
	for _, f := range found[1:] {
		if f.Contract != found[0].Contract {
			return framework.ServedVersion{}, usageError("topic %s exists in contracts %s and %s: give --contract", topic, cell(found[0].Contract), cell(f.Contract))
		}
	}
	// The highest version, as a client in fork mode would agree on.
	sort.Slice(found, func(i, j int) bool { return less(found[i].Version, found[j].Version) })
	return found[len(found)-1], nil
}

func less(a, b string) bool {
	va, errA := version.NewVersion(a)
	vb, errB := version.NewVersion(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return va.LessThan(vb)
}

// frame is a watch stream frame (docs/topics.md).
type frame struct {
	Type       string          `json:"type"`
	Key        string          `json:"key"`
	Epoch      json.RawMessage `json:"epoch"`
	Seq        json.RawMessage `json:"seq"`
	Object     json.RawMessage `json:"object"`
	WriterLost bool            `json:"writerLost"`
	Instance   string          `json:"instance"`
	Reason     string          `json:"reason"`
	Fresh      bool            `json:"fresh"`
}

// formatFrame renders one frame as a line; end is true for the closing
// frame. Pings are not shown.
func formatFrame(b []byte) (line string, end bool) {
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return "? " + text(string(b)), false
	}
	switch f.Type {
	case "set":
		// The object is valid JSON (it decoded): its strings hold no raw
		// control characters, and the output's termWriter escapes the
		// rest within them.
		return fmt.Sprintf("set %s %s", cell(f.Key), f.Object), false
	case "delete":
		if f.WriterLost {
			return fmt.Sprintf("delete %s (writer lost)", cell(f.Key)), false
		}
		return "delete " + cell(f.Key), false
	case "synced":
		return "synced (held by instance " + cell(f.Instance) + ")", false
	case "ping":
		return "", false
	case "closing":
		return "closing: " + text(f.Reason), true
	}
	return text(string(b)), false
}

// heartbeat renews the watch's session until ctx ends.
func heartbeat(ctx context.Context, srv server, w handshake.Welcome) {
	every := time.Duration(w.Heartbeat)
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	body := map[string][]string{"sessions": {w.Session}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c, cancel := context.WithTimeout(ctx, every)
			_, _ = srv.do(c, http.MethodPost, protocol.PathHeartbeat, nil, body)
			cancel()
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
