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

func runWatch(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	var conn connFlags
	conn.register(fs)
	contract := fs.String("contract", "", "the topic's contract, when several contracts have a topic of that name")
	ver := fs.String("version", "", "the contract version to watch at (default: the highest served)")
	release := fs.String("release", "", "the client release to watch as (checked against the server's release constraint)")
	file := fs.String("contract-file", "", "the contract file of the topic (as check's): its contract, version, client and fingerprint are used, and the server's status is not read")
	var sel selection
	fs.Var(&sel, "select", "FIELD=VALUE: only the objects whose selector FIELD holds VALUE (repeatable; every one must match; the topic's selectors are in its contract)")
	pos, err := parse(fs, args, "URL", "TOPIC")
	if err != nil {
		return err
	}
	base, err := baseURL(pos[0])
	if err != nil {
		return err
	}
	topic := pos[1]
	hc, err := conn.client()
	if err != nil {
		return err
	}
	setup, cancelSetup := context.WithTimeout(ctx, conn.timeout)
	defer cancelSetup()
	var served framework.ServedVersion
	var st framework.ServerStatus
	if *file != "" {
		// The contract file says all a watch needs: the status, which
		// under mutual TLS is an operator's, is not read.
		if served, err = servedFromFile(*file, topic, *contract, *ver, sel); err != nil {
			return err
		}
	} else {
		if st, err = fetchStatus(setup, hc, conn.maxBytes, base); err != nil {
			if conn.identity != nil && codeOf(err) == "permission_denied" {
				return fmt.Errorf("%w: the status is an operator's; give --contract-file to watch without it", err)
			}
			return err
		}
		if served, err = pickTopic(st, topic, *contract, *ver); err != nil {
			return err
		}
		if err := sel.check(st, served, topic); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	header := http.Header{}
	behalf := conn.identity != nil && conn.identity.Component != served.Client
	if behalf {
		// Another identity than the contract's client (an operator's)
		// watches on behalf of the client component, without a session:
		// see headerOnBehalfOf.
		header.Set(headerOnBehalfOf, served.Client)
	} else {
		// A watch needs a session: lockstepctl handshakes as the
		// contract's client, under an instance of its own.
		hello := handshake.Hello{Contract: served.Contract, Component: served.Client, Instance: "lockstepctl-watch-" + randomHex(6),
			Release: *release, Offers: []handshake.Offer{{Version: served.Version, Fingerprint: served.Fingerprint}}}
		a, err := do(setup, hc, conn.maxBytes, http.MethodPost, base+protocol.PathHandshake, nil, hello)
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			return errorOf(a, "handshake")
		}
		var welcome handshake.Welcome
		if err := json.Unmarshal(a.body, &welcome); err != nil {
			return fmt.Errorf("welcome did not decode: %w", err)
		}
		session := http.Header{protocol.HeaderSession: {welcome.Session}}
		defer func() {
			// Close the session, so the server does not wait for it to lapse.
			c, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			_, _ = do(c, hc, smallAnswer, http.MethodDelete, base+protocol.PathSession, session, nil)
		}()
		go heartbeat(ctx, hc, base, welcome)
		header.Set(protocol.HeaderSession, welcome.Session)
	}

	watchURL := base + protocol.WatchPath(served.Contract, served.Version, topic)
	if len(sel) > 0 {
		watchURL += "?" + sel.query()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		err := errorOf(answer{status: resp.StatusCode, body: b}, "watch")
		if behalf {
			return fmt.Errorf("%w: the server does not accept a watch on behalf of %s from %s (a server that predates it, or an identity it does not take for an operator); watch with a %s certificate",
				err, cell(served.Client), conn.identity, cell(served.Client))
		}
		return err
	}
	where := ""
	if len(sel) > 0 {
		where = " where " + sel.String()
	}
	at := base
	if st.Component != "" {
		at += " (" + cell(st.Component) + ")"
	}
	fmt.Fprintf(stdout, "# watching %s %s %s%s at %s\n", cell(served.Contract), cell(served.Version), topic, where, at)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), int(min(conn.maxBytes, 1<<30)))
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
		return nil // interrupted: the usual way to stop watching
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("watch stream: %w: a frame over --max-bytes %d", errTooLarge, conn.maxBytes)
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
func heartbeat(ctx context.Context, hc *http.Client, base string, w handshake.Welcome) {
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
			_, _ = do(c, hc, smallAnswer, http.MethodPost, base+protocol.PathHeartbeat, nil, body)
			cancel()
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
