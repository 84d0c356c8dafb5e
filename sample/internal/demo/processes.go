package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// The process mode runs the sample's binaries, built with go build, as
// separate processes on 127.0.0.1 and upgrades them one at a time: a
// process is stopped with SIGTERM (it drains) and its next version started
// at the same address. What happened is observed from outside only, as an
// operator would: /readyz, /status (the sessions each client holds) and
// /metrics of every process, sampled every sampleEvery.

// sampleEvery is how often the process mode observes every process.
const sampleEvery = 50 * time.Millisecond

// NodeControllerName is the name the kubelet and the scheduler resolve to
// find the node controller when [Options].DNSServer is set.
const NodeControllerName = "nodecontroller.sample.test."

// binaries are the sample's commands the process mode builds.
var binaries = []string{"nodecontroller", "kubelet", "scheduler", "extender"}

// pairs are the (client, server) pairs the process mode follows, with the
// contract between them.
var pairs = []struct{ client, server, contract string }{
	{Kubelet, NodeController, "nodestatus"},
	{Scheduler, NodeController, "nodehealth"},
	{Scheduler, Extender, "extender"},
	{Scheduler, LegacyExtender, "extender"},
}

// speaksByVersion is what each component's versions speak, as the
// processes run them (the scheduler and extender v2 in fork mode).
var speaksByVersion = map[string]map[string]map[string][]string{
	NodeController: {"v1": {"nodestatus": {"1.0.0"}, "nodehealth": {"1.0.0"}}, "v2": {"nodestatus": {"2.0.0"}, "nodehealth": {"2.0.0"}}},
	Kubelet:        {"v1": {"nodestatus": {"1.0.0"}}, "v2": {"nodestatus": {"2.0.0"}}},
	Scheduler: {"v1": {"nodehealth": {"1.0.0"}, "extender": {"1.0.0"}},
		"v2": {"nodehealth": {"2.0.0", "1.0.0"}, "extender": {"2.0.0", "1.0.0"}}},
	Extender:       {"v1": {"extender": {"1.0.0"}}, "v2": {"extender": {"2.0.0", "1.0.0"}}},
	LegacyExtender: {"v1": {"extender": {"1.0.0"}}},
}

// processInvariants are the invariants the process mode checks.
var processInvariants = []invariantSaid{
	{upgradesim.InvariantVersions, "every session a client held was at a version both sides speak (from /status)"},
	{upgradesim.InvariantSteps, "every process started, became ready when its peers were compatible, and stopped on SIGTERM"},
	{upgradesim.InvariantExternalUninterrupted, "no call to the never-upgraded legacy extender failed (/metrics of both sides)"},
	{"reports-never-failed", "no kubelet report failed: blocked reports waited and went through"},
	{"sessions-resumed", "every client ended holding a session: every blocked pair resumed"},
	{"every-node-reported", "the final node controller knows every node, all Ready"},
	{"pods-run-where-placed", "every pod the final node controller holds bound (its bindings outlive its upgrade) was reported Running by the kubelet of its node within " + runBound.String() + " of its binding, not counting the kubelet's and the node controller's upgrades (from SIGTERM until the kubelet held a session again)"},
	{"pods-scheduled-after-upgrade", "the upgraded scheduler placed pods"},
}

// Observation is what the process mode saw of one component at one moment.
type Observation struct {
	At        time.Duration
	Step      int
	Component string
	// Version is what the component runs, "" when it is down; Draining
	// is set from its SIGTERM until it exits.
	Version  string
	Draining bool
	// Ready is whether its /readyz answered 200, and ReadyText what it
	// said.
	Ready     bool
	ReadyText string
	// Agreed maps each server component this component calls to the
	// contract versions it holds sessions at ("nodestatus 2.0.0"), empty
	// when it holds none.
	Agreed map[string][]string
}

// Incarnation is one process of a component, and its metrics just before
// it was stopped.
type Incarnation struct {
	Component, Version string
	From, To           time.Duration
	Metrics            Metrics
	// Status is its /status at the same moment.
	Status json.RawMessage
}

// ProcessResult is a finished process-mode run.
type ProcessResult struct {
	// Report holds the timeline, the violations, and the final versions and
	// sessions, as upgradesim reports them.
	Report       *upgradesim.Report
	Observations []Observation
	Incarnations []Incarnation
	Files        []string
}

// proc is one running process.
type proc struct {
	component, version string
	addr               string
	cmd                *exec.Cmd
	exited             chan struct{}
	from               time.Duration
	draining           bool
	last               Metrics // the last scrape, for call deltas
	final              *finalScrape
}

// finalScrape is what was read of a process at the end of the run.
type finalScrape struct {
	metrics Metrics
	status  json.RawMessage
}

type processRun struct {
	opts   Options
	start  time.Time
	binDir string
	logDir string
	addrs  map[string]string

	mu           sync.Mutex
	procs        map[string]*proc
	step         int
	steps        []upgradesim.StepSpan
	rows         map[string]*upgradesim.Row
	rowOrder     []string
	calls        map[string]*upgradesim.CallSeries
	observations []Observation
	// rounds are the sample rounds completed so far, in order.
	rounds       []sampleRound
	incarnations []Incarnation
	violations   []upgradesim.Violation
	logs         []string
	// podStore is the node controller's --pod-store: its bindings
	// outlive its upgrade.
	podStore string
	// outages are those of the kubelet↔nodecontroller loop.
	outages loopOutages
}

// RunProcesses builds the sample's binaries (into opts.BinDir, or a
// temporary folder), runs them as processes on 127.0.0.1 through the same
// rolling upgrade as [Run], and reports it to opts.Out. The error wraps
// [ErrInvariant] when an invariant broke; the result is returned with it.
func RunProcesses(ctx context.Context, opts Options) (*ProcessResult, error) {
	opts.defaults()
	r := &processRun{opts: opts, binDir: opts.BinDir, addrs: map[string]string{}, procs: map[string]*proc{},
		rows: map[string]*upgradesim.Row{}, calls: map[string]*upgradesim.CallSeries{}}
	if r.binDir == "" {
		dir, err := os.MkdirTemp("", "lockstep-demo-bin")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		r.binDir = dir
	}
	state, err := os.MkdirTemp("", "lockstep-demo-state")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	r.podStore = filepath.Join(state, "pods.json")
	r.logDir = opts.OutputDir
	if r.logDir == "" {
		r.logDir = r.binDir
	}
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Out, "lockstep demo: the sample control plane through a rolling upgrade v1 → v2, skew %s, %d nodes, as processes\n",
		opts.Skew, opts.Nodes)
	fmt.Fprintf(opts.Out, "building %s into %s\n\n", strings.Join(binaries, ", "), r.binDir)
	if err := buildBinaries(ctx, r.binDir); err != nil {
		return nil, err
	}
	for _, c := range []string{NodeController, Kubelet, Scheduler, Extender, LegacyExtender} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		r.addrs[c] = addr
		versions := []string{"v1", "v2"}
		if c == LegacyExtender {
			versions = []string{"v1"}
		}
		r.addRow(c, upgradesim.RowReplica, versions)
	}
	for _, p := range pairs {
		label := p.client + "→" + p.server
		r.addRow(label, upgradesim.RowPair, nil)
		r.calls[label] = &upgradesim.CallSeries{Label: label}
	}
	r.start = time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		r.sampleLoop(sampleCtx)
	}()
	r.runPlan(ctx)
	stopSampling()
	<-sampled
	agreed := r.checkRunning()
	final := map[string]string{}
	r.mu.Lock()
	for c, p := range r.procs {
		final[c] = p.version
	}
	r.mu.Unlock()
	r.stopAll()
	r.checkIncarnations()
	rep := r.report(final, agreed)
	res := &ProcessResult{Report: rep, Observations: r.observations, Incarnations: r.incarnations}
	sum := summarize(rep, "separate processes", processInvariants)
	sum.outcomes = r.outcomes()
	writeReport(opts.Out, sum)
	if opts.OutputDir != "" {
		files, err := writeFiles(opts.OutputDir, rep.Timeline, sum)
		res.Files = append(files, r.logs...)
		if err != nil {
			return res, err
		}
		fmt.Fprintf(opts.Out, "\nwritten: %v\n", res.Files)
	}
	if rep.Failed() {
		return res, fmt.Errorf("%w: %d violation(s)", ErrInvariant, len(rep.Violations))
	}
	return res, ctx.Err()
}

// buildBinaries builds the sample's commands with the go command, in the
// sample's own module (the one the running test or demo belongs to).
func buildBinaries(ctx context.Context, dir string) error {
	root, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("finding the module: %w", err)
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if raceEnabled() {
		args = append(args, "-race")
	}
	for _, b := range binaries {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// raceEnabled reports whether this program was built with the race
// detector (as by `go test -race`). The binaries are then built with it too:
// they reuse the race-built packages the test's own build left in the build
// cache instead of compiling the Kubernetes types and the framework once
// more without it (minutes on two cores, inside the test's deadline), and
// the processes run race-detected as well.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (r *processRun) now() time.Duration { return time.Since(r.start) }

// args are a component's command line at a version.
func (r *processRun) args(component, version string) (binary string, args []string) {
	ncPeer := "http://" + r.addrs[NodeController]
	var dns []string
	if r.opts.DNSServer != "" {
		_, port, _ := net.SplitHostPort(r.addrs[NodeController])
		ncPeer = "dns+http://" + NodeControllerName + ":" + port
		dns = []string{"--dns-server", r.opts.DNSServer, "--dns-interval", "100ms"}
	}
	common := []string{"--listen", r.addrs[component], "--api", version, "--log-level", "debug"}
	fork := []string{}
	if version == "v2" && (component == Scheduler || component == Extender) {
		fork = []string{"--fork"}
	}
	switch component {
	case NodeController:
		return "nodecontroller", append(common, "--node-grace", (3 * r.opts.Skew).String(), "--session-ttl", "2s", "--pod-store", r.podStore)
	case Kubelet:
		return "kubelet", slices.Concat(common, dns, []string{"--nodecontroller", ncPeer,
			"--nodes", strconv.Itoa(r.opts.Nodes), "--change-every", "500ms", "--pods-end"})
	case Scheduler:
		return "scheduler", slices.Concat(common, fork, dns, []string{"--nodecontroller", ncPeer, "--pod-rate", "10",
			"--extender", Extender + "=http://" + r.addrs[Extender] + ";bind;weight=1",
			"--extender", LegacyExtender + "=http://" + r.addrs[LegacyExtender] + LegacyPrefix + ";pin=1.0.0;weight=1"})
	case Extender:
		return "extender", slices.Concat(common, fork, []string{"--maintenance", MaintenanceNode})
	default: // the legacy extender
		return "extender", append(common, "--plain", "--url-prefix", LegacyPrefix, "--maintenance", MaintenanceNode)
	}
}

// startProc starts a component's process and waits until it answers
// /healthz.
func (r *processRun) startProc(ctx context.Context, component, version string) error {
	binary, args := r.args(component, version)
	logPath := filepath.Join(r.logDir, fmt.Sprintf("%s-%s.log", component, version))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(r.binDir, binary), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s %s: %w", component, version, err)
	}
	p := &proc{component: component, version: version, addr: r.addrs[component], cmd: cmd, exited: make(chan struct{}), from: r.now()}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	r.mu.Lock()
	r.procs[component] = p
	if !slices.Contains(r.logs, logPath) {
		r.logs = append(r.logs, logPath)
	}
	r.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-p.exited:
			return fmt.Errorf("%s %s exited at start; see %s", component, version, logPath)
		default:
		}
		if resp, err := httpClient.Get("http://" + p.addr + "/healthz"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s %s did not answer /healthz within 10s; see %s", component, version, logPath)
}

// stopProc stops a component's process with SIGTERM, as Kubernetes does,
// after scraping its metrics and status one last time, and waits for it
// to exit.
func (r *processRun) stopProc(component string) error {
	r.mu.Lock()
	p := r.procs[component]
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	inc := Incarnation{Component: component, Version: p.version, From: p.from}
	if p.final != nil {
		inc.Metrics, inc.Status = p.final.metrics, p.final.status
	} else {
		inc.Metrics, inc.Status = r.scrapeFinal(p)
	}
	r.mu.Lock()
	p.draining = true
	if component == Kubelet || component == NodeController {
		r.outages.begin(r.now())
	}
	r.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		err = fmt.Errorf("%s %s did not stop within 15s of SIGTERM", component, p.version)
	}
	if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() && err == nil {
		err = fmt.Errorf("%s %s exited with %s after SIGTERM", component, p.version, p.cmd.ProcessState)
	}
	inc.To = r.now()
	r.mu.Lock()
	delete(r.procs, component)
	r.incarnations = append(r.incarnations, inc)
	r.mu.Unlock()
	return err
}

// scrapeFinal reads a process's metrics and status for its incarnation's
// record, and counts its last calls.
func (r *processRun) scrapeFinal(p *proc) (Metrics, json.RawMessage) {
	m, err := Scrape(httpClient, "http://"+p.addr+"/metrics")
	if err == nil {
		r.recordCalls(p, m)
	}
	st, _ := getStatus(p.addr)
	return m, st
}

// stopAll stops every process at the end, after reading all of them while
// all still run, so each one's record shows the whole system up.
func (r *processRun) stopAll() {
	r.mu.Lock()
	procs := make([]*proc, 0, len(r.procs))
	for _, p := range r.procs {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	for _, p := range procs {
		m, st := r.scrapeFinal(p)
		p.final = &finalScrape{m, st}
	}
	for _, c := range []string{Scheduler, Kubelet, Extender, NodeController, LegacyExtender} {
		if err := r.stopProc(c); err != nil {
			r.violate(upgradesim.InvariantSteps, "%v", err)
		}
	}
}

func getStatus(addr string) (json.RawMessage, error) {
	resp, err := httpClient.Get("http://" + addr + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&raw)
	return raw, err
}

// runPlan runs the rolling upgrade.
func (r *processRun) runPlan(ctx context.Context) {
	skew := r.opts.Skew
	start := func(c, v string) (string, func() error) {
		return fmt.Sprintf("start %s at %s", c, v), func() error { return r.startProc(ctx, c, v) }
	}
	upgrade := func(c string) (string, func() error) {
		return fmt.Sprintf("upgrade %s to v2 (SIGTERM, then start v2 at the same address)", c), func() error {
			if err := r.stopProc(c); err != nil {
				return err
			}
			return r.startProc(ctx, c, "v2")
		}
	}
	wait := func(d time.Duration) (string, func() error) {
		return fmt.Sprintf("wait %s, until every pair settled (within %s) and every process was observed %d times since", d, settleBound, holdRounds),
			func() error { return r.hold(ctx, d) }
	}
	ready := func() (string, func() error) {
		return "wait until every /readyz answers 200 within 20s", func() error { return r.waitReady(ctx, 20*time.Second) }
	}
	var steps []struct {
		text string
		run  func() error
	}
	add := func(text string, run func() error) {
		steps = append(steps, struct {
			text string
			run  func() error
		}{text, run})
	}
	add(start(LegacyExtender, "v1"))
	add(start(Extender, "v1"))
	add(start(NodeController, "v1"))
	add(start(Kubelet, "v1"))
	add(start(Scheduler, "v1"))
	add(ready())
	add(wait(time.Second))
	add(upgrade(Kubelet))
	add(wait(skew))
	add(upgrade(NodeController))
	add(wait(skew))
	add(upgrade(Scheduler))
	add(ready())
	add(wait(time.Second))
	add(upgrade(Extender))
	add(ready())
	add(wait(time.Second))
	for i, st := range steps {
		from := r.now()
		r.mu.Lock()
		r.step = i + 1
		r.mu.Unlock()
		err := st.run()
		r.mu.Lock()
		r.steps = append(r.steps, upgradesim.StepSpan{Number: i + 1, Text: st.text, From: from, To: r.now()})
		r.mu.Unlock()
		if err != nil {
			r.violate(upgradesim.InvariantSteps, "step %d (%s): %v", i+1, st.text, err)
			return
		}
	}
	r.mu.Lock()
	r.step = len(steps) + 1
	r.mu.Unlock()
}

// Bounds of a hold (see hold).
const (
	// stepSettle is how long, from a step's start, what the step before
	// it did may take to show in what the processes report (a drained
	// client's sessions closed, its peer's readiness following): a hold's
	// rounds count from then on.
	stepSettle = 300 * time.Millisecond
	// holdRounds is how many sample rounds a hold lasts at least once the
	// pairs settled, so that the skew it holds is observed whatever the
	// machine's speed: under the race detector at load 30 a round of
	// probes has taken over 700 ms.
	holdRounds = 3
	// settleBound bounds the wait for the pairs to settle: their
	// handshakes after an upgrade, which a loaded machine has taken
	// seconds over (not the 100 ms to 500 ms of backoff they wait on a
	// quiet one).
	settleBound = 20 * time.Second
)

// hold holds the system as it is for d from the step's start, and then
// until it has settled (see settledPairs) and holdRounds sample rounds
// that began at least stepSettle into the step and after it settled have
// seen every running process answer. A skew is held for d, as the plan
// says, and for as long as an observer needs to see it: the sample loop,
// not the wall clock, says when the step showed what it was for. It fails
// when the pairs do not settle within settleBound.
func (r *processRun) hold(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	step, from := r.step, r.now()
	r.mu.Unlock()
	deadline := time.Now().Add(max(d, settleBound))
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		r.mu.Lock()
		var settledAt time.Duration = -1
		seen, why := 0, "no sample round completed"
		for _, rd := range r.rounds {
			if rd.step != step || rd.at < from {
				continue
			}
			if !rd.settled {
				why = rd.why
				// Counted only from the round that settled it.
				if settledAt < 0 {
					continue
				}
			}
			if settledAt < 0 {
				settledAt = rd.at
			}
			if rd.at >= from+stepSettle && rd.why == "" {
				seen++
			}
		}
		r.mu.Unlock()
		if settledAt >= 0 && seen >= holdRounds && r.now()-from >= d {
			return nil
		}
		if time.Now().After(deadline) {
			if settledAt < 0 {
				return fmt.Errorf("the pairs did not settle within %s: %s", settleBound, why)
			}
			return fmt.Errorf("%d of %d sample rounds saw every process answer within %s", seen, holdRounds, settleBound)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitReady waits until every running process answers /readyz with 200.
func (r *processRun) waitReady(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var why []string
	for time.Now().Before(deadline) {
		why = why[:0]
		r.mu.Lock()
		procs := make([]*proc, 0, len(r.procs))
		for _, p := range r.procs {
			procs = append(procs, p)
		}
		r.mu.Unlock()
		for _, p := range procs {
			if ok, text, _ := readyz(p.addr); !ok {
				why = append(why, p.component+": "+text)
			}
		}
		if len(why) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	sort.Strings(why)
	return fmt.Errorf("not ready within %s: %s", bound, strings.Join(why, "; "))
}

// readyz reads a process's /readyz: whether it answered 200, and what it
// said; err is set, and the text says it, when it did not answer.
func readyz(addr string) (bool, string, error) {
	resp, err := httpClient.Get("http://" + addr + "/readyz")
	if err != nil {
		return false, err.Error(), err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode == http.StatusOK, strings.TrimSpace(b.String()), nil
}

func (r *processRun) violate(invariant, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	step := r.step
	text := "before the first step"
	if step > 0 && step <= len(r.steps)+1 {
		text = fmt.Sprintf("step %d", step)
	}
	r.violations = append(r.violations, upgradesim.Violation{Invariant: invariant, Plan: "rolling upgrade v1 → v2 (processes)",
		Step: step, StepText: text, At: r.now(), Message: fmt.Sprintf(format, args...)})
}
