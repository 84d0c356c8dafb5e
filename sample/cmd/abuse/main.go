// Command abuse attacks the sample's node controller, run as a process of
// its own under mutual TLS on 127.0.0.1, with the attacks of a stolen
// kubelet certificate and of peers without any, at the sizes they were
// first found at (or smaller, with -scale small), and reports for each the
// node controller's peak RSS and what a legitimate kubelet got meanwhile:
// its calls' p99 and errors, whether its node was published, whether its
// watch opened. Attacks 9 and 10 are a hostile server's against the
// operator's lockstepctl (-lockstepctl): its peak RSS, its runs' p99, and
// what reached the terminal. Attack 11 is one certificate holding
// connections from many addresses.
//
//	go build -o /tmp/nc ./cmd/nodecontroller && go run ./cmd/abuse -nodecontroller /tmp/nc [-lockstepctl /tmp/lockstepctl] [-scale full|small] [-attacks 1,2,…]
//
// `make abuse` runs it at full size. It speaks the wire protocol only, so
// it runs against any build of the node controller: the figures of one
// build beside another's are the before and after of a change. The
// bounded forms of the same attacks, with assertions, run in `make test`
// (framework/containment_test.go, sample/internal/nodecontroller).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// sizes are an attack's dimensions at one scale.
type sizes struct {
	unauthenticated int // attack 1: requests to made-up paths
	topicNodes      int // attack 2: 30 KB statuses from one certificate
	watchCerts      int // attack 3: certificates taking PodAssignment watch slots
	watchesPerCert  int
	selWatchers     int // attack 5: watchers with 60 KB selector values
	slowBodies      int // attack 6: connections trickling a body
	slowWait        time.Duration
	h2Conns         int // attack 7: HTTP/2 connections of stalled hellos
	h2Streams       int
	fdLimit         int // attack 8: the node controller's descriptor limit
	ctlRuns         int // attacks 9 and 10: runs of lockstepctl
	idFdLimit       int // attack 11: the node controller's descriptor limit
	idConns         int // attack 11: connections from each of four addresses
}

var scales = map[string]sizes{
	"full":  {50000, 9000, 3, 4096, 4096, 5000, 40 * time.Second, 200, 250, 256, 30, 1024, 200},
	"small": {2000, 300, 3, 300, 256, 200, 15 * time.Second, 10, 50, 256, 6, 1024, 200},
}

func main() {
	bin := flag.String("nodecontroller", "", "the node controller binary to attack (required)")
	ctlBin := flag.String("lockstepctl", "", "the lockstepctl binary a hostile server attacks (attacks 9 and 10; skipped without it)")
	scale := flag.String("scale", "full", "full (the sizes the attacks were found at) or small")
	which := flag.String("attacks", "1,2,3,4,5,6,7,8,9,10,11", "attacks to run, by number")
	flag.Parse()
	sz, ok := scales[*scale]
	if *bin == "" || !ok {
		flag.Usage()
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "lockstep-abuse-")
	check(err)
	defer os.RemoveAll(dir)
	w := newWorld(dir, *bin)
	w.ctlBin = *ctlBin
	fmt.Printf("lockstep abuse: %s, scale %s, node controller %s; the machine is shared, so latencies are those of a loaded machine\n\n", time.Now().UTC().Format(time.RFC3339), *scale, *bin)
	attacks := map[string]func(*world, sizes) result{
		"1": attackMetrics, "2": attackTopicFill, "3": attackWatchSlots, "4": attackSquat,
		"5": attackSelectors, "6": attackSlowBodies, "7": attackH2Streams, "8": attackConnReserve,
		"9": attackTerminal, "10": attackHugeStatus, "11": attackIdentityConns,
	}
	for _, n := range strings.Split(*which, ",") {
		a := attacks[strings.TrimSpace(n)]
		if a == nil || (*ctlBin == "" && (n == "9" || n == "10")) {
			continue
		}
		r := a(w, sz)
		if r.subject == "lockstepctl" {
			fmt.Printf("attack %s: %s\n  lockstepctl peak RSS %d MiB; the operator's runs: %d, p99 %s, %d failed%s\n  %s\n\n",
				n, r.name, r.rss>>20, r.calls, r.p99.Round(time.Millisecond), r.errs, firstErr(r.firstErr), strings.Join(r.notes, "\n  "))
			continue
		}
		fmt.Printf("attack %s: %s\n  node controller peak RSS %d MiB; legitimate kubelet: %d calls, p99 %s, %d errors%s\n  %s\n\n",
			n, r.name, r.rss>>20, r.calls, r.p99.Round(time.Millisecond), r.errs, firstErr(r.firstErr), strings.Join(r.notes, "\n  "))
	}
}

func firstErr(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + s + ")"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}

// world is the CA, the certificates and the node controller binary.
type world struct {
	dir, bin string
	ctlBin   string // lockstepctl, for attacks 9 and 10
	ca       *certs.CA
	server   [3]string // cert, key, ca files of the node controller
}

func newWorld(dir, bin string) *world {
	ca, err := certs.NewCA("abuse CA")
	check(err)
	w := &world{dir: dir, bin: bin, ca: ca}
	cert, err := ca.Issue(certs.Spec{Component: "nodecontroller", Name: "nc-0", Server: true, Lifetime: 24 * time.Hour})
	check(err)
	c, k, a, err := ca.WriteFiles(dir, "nodecontroller", cert)
	check(err)
	w.server = [3]string{c, k, a}
	return w
}

// tls returns a client TLS configuration presenting lockstep://component/name
// (no certificate when component is "").
func (w *world) tls(component, name string) *tls.Config {
	cfg := &tls.Config{RootCAs: w.ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if component != "" {
		cert, err := w.ca.Issue(certs.Spec{Component: component, Name: name, Lifetime: 24 * time.Hour})
		check(err)
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// server is one node controller process.
type server struct {
	cmd  *exec.Cmd
	addr string
	url  string
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

// start runs the node controller on a free port of 127.0.0.1, with a
// descriptor limit if fdLimit > 0, and samples its RSS until stopped.
func (w *world) start(fdLimit int) *server {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := l.Addr().String()
	l.Close()
	args := []string{"--listen", addr, "--api", "v2", "--tls-cert", w.server[0], "--tls-key", w.server[1], "--tls-ca", w.server[2],
		"--log-level", "error", "--node-grace", "60s"}
	cmd := exec.Command(w.bin, args...)
	if fdLimit > 0 {
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, fdLimit), w.bin}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	check(cmd.Start())
	s := &server{cmd: cmd, addr: addr, url: "https://" + addr, stop: make(chan struct{}), done: make(chan struct{})}
	op := w.client(w.tls("operator", "abuse"), false)
	for i := 0; ; i++ {
		resp, err := op.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 300 {
			check(fmt.Errorf("the node controller did not start: %v", err))
		}
		time.Sleep(100 * time.Millisecond)
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss := rssOf(cmd.Process.Pid); rss > s.peak.Load() {
				s.peak.Store(rss)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *server) kill() {
	close(s.stop)
	<-s.done
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// rssOf is a process's resident set size, 0 once it is gone.
func rssOf(pid int) uint64 { return procStatus(pid, "VmRSS:") }

// peakRSSOf is the most a process's resident set has been since it
// started its program (the kernel's high-water mark), 0 once it is gone.
func peakRSSOf(pid int) uint64 { return procStatus(pid, "VmHWM:") }

// procStatus is a size field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (w *world) client(cfg *tls.Config, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// result is what one attack reports.
type result struct {
	// subject is what the figures are of: the node controller and a
	// legitimate kubelet (""), or "lockstepctl", the operator's process.
	subject  string
	name     string
	rss      uint64
	calls    int
	p99      time.Duration
	errs     int
	firstErr string
	notes    []string
}

// legit is a well-behaved kubelet of its own node: it reports its status
// every 10 ms and records each call's latency.
type legit struct {
	node   string
	client nsv2.Client
	fw     *framework.Client
	mu     sync.Mutex
	lat    []time.Duration
	errs   []error
	stop   chan struct{}
	done   chan struct{}
}

func (w *world) legit(s *server, node string) *legit {
	creds := w.tls("kubelet", node)
	tr := &http.Transport{TLSClientConfig: creds, ForceAttemptHTTP2: true}
	fw, err := framework.NewClient(nsv2.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
		Endpoints: []string{s.url}, Transport: tr, Instance: node + "-kubelet"})
	check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check(fw.WaitReady(ctx))
	return &legit{node: node, client: nsv2.NewClient(fw), fw: fw}
}

func (l *legit) run() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		for i := 0; i < 10_000_000; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, err := l.client.ReportStatus(ctx, nodeStatus(l.node, 0))
			cancel()
			l.mu.Lock()
			l.lat = append(l.lat, time.Since(start))
			if err != nil {
				l.errs = append(l.errs, err)
			}
			l.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func (l *legit) finish(r *result) {
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	l.fw.Close()
	lat := slices.Clone(l.lat)
	slices.Sort(lat)
	r.calls, r.errs = len(lat), len(l.errs)
	if len(lat) > 0 {
		r.p99 = lat[len(lat)*99/100]
	}
	if len(l.errs) > 0 {
		r.firstErr = clip(l.errs[0].Error())
	}
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// nodeStatus is a Ready node's status, padded with labels to about pad
// bytes.
func nodeStatus(name string, pad int) *nsv2.NodeStatus {
	reason := "KubeletReady"
	st := &nsv2.NodeStatus{NodeName: name,
		Conditions:  nsv2.Conditions{Ready: nsv2.Condition{Status: nsv2.ConditionStatusTrue, Reason: &reason}},
		Capacity:    nsv2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Allocatable: nsv2.Resources{CPUMillis: 3800, MemoryBytes: 15 << 30, Pods: 110}}
	if pad > 0 {
		st.Labels = map[string]string{}
		for i := 0; (i+1)*72 < pad; i++ { // 70 bytes a label, encoded
			st.Labels[fmt.Sprintf("example.com/label-%04d", i)] = strings.Repeat("v", 40)
		}
	}
	return st
}

// peer is a raw client of the protocol with one certificate.
type peer struct {
	hc  *http.Client
	url string
}

func (w *world) peer(s *server, component, name string, h2 bool) *peer {
	return &peer{hc: w.client(w.tls(component, name), h2), url: s.url}
}

// do sends a request and returns its status and its body (up to 1 MiB).
func (p *peer) do(method, path, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, p.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(protocol.HeaderSession, token)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, nil
}

// handshake opens a session of contract c as instance and returns its
// token, or "" and the refusal.
func (p *peer) handshake(c *framework.Contract, instance string) (string, string) {
	hello, _ := json.Marshal(handshake.Hello{Contract: c.Name(), Component: "kubelet", Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
	code, b, err := p.do(http.MethodPost, protocol.PathHandshake, "", hello)
	if err != nil {
		return "", err.Error()
	}
	var welcome struct {
		Session string `json:"session"`
		Code    string `json:"code"`
	}
	_ = json.Unmarshal(b, &welcome)
	if code != http.StatusOK {
		return "", fmt.Sprintf("%d %s", code, welcome.Code)
	}
	return welcome.Session, ""
}

// heartbeat renews tokens in chunks.
func (p *peer) heartbeat(tokens []string) {
	for len(tokens) > 0 {
		n := min(len(tokens), 1000)
		body, _ := json.Marshal(map[string][]string{"sessions": tokens[:n]})
		_, _, _ = p.do(http.MethodPost, protocol.PathHeartbeat, "", body)
		tokens = tokens[n:]
	}
}

// keepAlive heartbeats the tokens it is given every second until stopped.
func keepAlive(p *peer, tokens func() []string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.heartbeat(tokens())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// tally counts answers by a short name.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tally) add(k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[k]++
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", k, t.m[k])
	}
	return b.String()
}

func codeOf(status int, body []byte) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Code == "" {
		return strconv.Itoa(status)
	}
	return fmt.Sprintf("%d %s", status, e.Code)
}

// scrape reads what an operator reads at path: its bytes, lines and time.
func (w *world) scrape(s *server, path string) string {
	op := w.peer(s, "operator", "abuse", false)
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	resp, err := op.hc.Do(req)
	if err != nil {
		return fmt.Sprintf("%s: %v after %s", path, err, time.Since(start).Round(time.Millisecond))
	}
	defer resp.Body.Close()
	var n, lines int
	br := bufio.NewReaderSize(resp.Body, 1<<16)
	for {
		b, err := br.ReadSlice('\n')
		n += len(b)
		if len(b) > 0 && b[len(b)-1] == '\n' {
			lines++
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	return fmt.Sprintf("%s: %d bytes, %d lines, %s", path, n, lines, time.Since(start).Round(time.Millisecond))
}

// legitOutcome is what the legitimate kubelet of node gets while an
// attack holds, the two outcomes every attack on the node controller
// reports: whether a scheduler sees its node in NodeHealth, and whether
// its watch of its own pods opens.
func (w *world) legitOutcome(s *server, node string) []string {
	return []string{w.published(s, node), w.watchOpens(s, node)}
}

// reportOnce has the legitimate kubelet of node report its status once,
// before an attack that measures new connections rather than a running
// kubelet's calls; it returns what went wrong, if anything, as notes.
func (w *world) reportOnce(s *server, node string) []string {
	l := w.legit(s, node)
	defer l.fw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.client.ReportStatus(ctx, nodeStatus(node, 0)); err != nil {
		return []string{"the kubelet's report before the attack: " + clip(err.Error())}
	}
	return nil
}

// published says whether a scheduler sees node in NodeHealth.
func (w *world) published(s *server, node string) string {
	p := w.peer(s, "scheduler", "scheduler-0", false)
	defer p.hc.CloseIdleConnections()
	hello, _ := json.Marshal(handshake.Hello{Contract: nhv2.Contract.Name(), Component: "scheduler", Instance: "abuse-scheduler",
		Release: "1.31.0", Offers: []handshake.Offer{nhv2.Contract.Offer()}})
	code, b, err := p.do(http.MethodPost, protocol.PathHandshake, "", hello)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("scheduler handshake: %d %v", code, err)
	}
	var welcome struct{ Session string }
	_ = json.Unmarshal(b, &welcome)
	req, _ := http.NewRequest(http.MethodGet, s.url+protocol.WatchPath(nhv2.Contract.Name(), nhv2.Contract.Version(), "NodeHealth"), nil)
	req.Header.Set(protocol.HeaderSession, welcome.Session)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := p.hc.Do(req.WithContext(ctx))
	if err != nil {
		return "NodeHealth watch: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "NodeHealth watch: " + codeOf(resp.StatusCode, b)
	}
	key := []byte(`"key":"` + node + `"`)
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	keys := 0
	for {
		line, err := br.ReadBytes('\n')
		if bytes.Contains(line, key) {
			state := ""
			if i := bytes.Index(line, []byte(`"state":"`)); i >= 0 {
				state, _, _ = strings.Cut(string(line[i+9:]), `"`)
			}
			return fmt.Sprintf("node %s published, state %s (found after %d other keys)", node, state, keys)
		}
		if bytes.Contains(line, []byte(`"type":"synced"`)) || err != nil {
			return fmt.Sprintf("node %s NOT published (%d other keys in the snapshot)", node, keys)
		}
		keys++
	}
}

// watchOpens says whether the legitimate kubelet's watch of its own pods
// opens.
func (w *world) watchOpens(s *server, node string) string {
	p := w.peer(s, "kubelet", node, false)
	defer p.hc.CloseIdleConnections()
	token, refused := p.handshake(nsv2.Contract, node+"-watch")
	if token == "" {
		return "the kubelet's watch session: " + refused
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+protocol.WatchPath(nsv2.Contract.Name(), nsv2.Contract.Version(), "PodAssignment")+"?nodeName="+node, nil)
	req.Header.Set(protocol.HeaderSession, token)
	resp, err := p.hc.Do(req)
	if err != nil {
		return "the kubelet's watch of its pods: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return "the kubelet's watch of its pods opens"
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return "the kubelet's watch of its pods is refused: " + codeOf(resp.StatusCode, b)
}
