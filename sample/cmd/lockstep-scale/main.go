// Command lockstep-scale runs one path of the founding case at a cluster's
// scale on one machine, all on 127.0.0.1, and reports what it measured as
// one JSON object on stdout. make scale runs it (from the e2e module's
// harness, e2e/scale) against a real etcd, kube-apiserver and
// kube-controller-manager, once per path.
//
// --path lockstep: N hollow nodes (the sample's kubelet, in child processes
// of their own, one per 1,250 nodes by default (--hollow-processes), each
// node with its own certificate, connection and source address) heartbeat
// to a node controller (in this process), report their
// status every --status-every, and run the pods bound to them (up to
// --pods-per-node each, bound through the node controller's Bind as the
// sample scheduler does) through their filtered watch. With --kubeconfig
// the node controller persists the user-visible subset of each node to the
// API server (package nodeobjects): the Node object, its Ready condition's
// transitions and a refresh every --node-refresh.
//
// --path kubernetes: the same N hollow nodes as Kubernetes runs them (the
// kube-hollow child): each registers its Node object and renews its Lease
// every --lease-every, reads its Node every 10 s and patches its NodeStatus
// when it changed or --node-status-every passed, as a kubelet does, all
// through client-go with its own certificate (system:node:<name>), and
// runs the pods bound to it (created and bound through the API server by
// this process, as a scheduler binds them), writing their status through
// the API server; kube-controller-manager's node lifecycle controller
// watches the Leases.
//
// On both paths, --kills nodes (each alone in a process of its own) are
// then killed with SIGKILL together, and the time until the API server
// shows each one's Ready condition not True is measured. What it reports:
//
//   - durable writes per second in the steady state (every node registered,
//     every pod placed): etcd's own count of the keys it wrote
//     (etcd_mvcc_put_total, --etcd-metrics), and the API server's writes by
//     resource (apiserver_request_total, --admin-kubeconfig), whose nodes
//     and leases are node liveness and status;
//   - the CPU (cores) and RSS of the processes named by --watch (the API
//     server, etcd, kube-controller-manager), of the node controller (this
//     process, on the lockstep path) and of the hollow nodes' processes
//     (summed);
//   - the p99 of each node's heartbeat request (lockstep's heartbeat, or
//     the Lease update);
//   - pod bind → Running p50 and p99;
//   - the time from each SIGKILL to the node being noticed, and its p99;
//   - the machine's load average at the start and the end.
//
// Every process it starts is stopped and its temporary directory removed
// before it exits.
//
//	lockstep-scale --nodes 300 --pods-per-node 5 --steady 20s --kills 3
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	"github.com/lockstep-dev/lockstep/sample/cmd/lockstep-scale/result"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller/nodeobjects"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hollow" {
		os.Exit(hollow(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "kube-hollow" {
		os.Exit(kubeHollow(os.Args[2:]))
	}
	os.Exit(run())
}

// config is the run's shape.
type config struct {
	nodes, podsPerNode, kills int
	statusEvery, heartbeat    time.Duration
	ttl, grace                time.Duration
	steady, placeFor          time.Duration
	// steadyBinds is how many pods a second are bound in the steady
	// window, one at a time, for its bind → Running.
	steadyBinds float64
	// startRate is how many nodes a second the hollow process starts, in
	// startTicks groups a second.
	startRate, startTicks int
	// tlsResumption: the hollow nodes keep their TLS sessions.
	tlsResumption bool
	// hollowGOGC, if not 0, is the main hollow process's GOGC, on both
	// paths, so that their simulators are alike.
	hollowGOGC      int
	registerFor     time.Duration
	readyFraction   float64
	bindConcurrency int
	// The API server and what is observed of it.
	kubeconfig, adminKubeconfig string
	nodeRefresh                 time.Duration
	nodeWrites                  float64
	watch, etcdMetrics          string
	sourceAddrs                 bool
	// placeProfile, if set, is where the node controller's CPU profile
	// of the placement is written.
	placeProfile string
	// steadyProfiles, if set, is the directory the CPU profiles of the
	// steady window are written to: the node controller's
	// (node-controller.pprof) and the main hollow process's (hollow.pprof).
	steadyProfiles string
	// killAtRegistration kills the victims once every node is
	// registered, not as the steady window starts.
	killAtRegistration bool
	// ncGOGC and ncMemoryLimitMiB, if not 0, are the node controller's
	// GOGC and soft memory limit (this process's).
	ncGOGC, ncMemoryLimitMiB int
	// bindsPerSecond, if not 0, paces the placement's binds.
	bindsPerSecond float64
	// stallLog: both processes log, every second, what may stall them.
	stallLog bool
	// hollowProcs is how many processes the hollow nodes that are not
	// killed run in.
	hollowProcs int
	// The Kubernetes path.
	path                        string
	clientCA, clientCAKey       string
	leaseEvery, nodeStatusEvery time.Duration
}

func run() int {
	c, out := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go sampleLoad(ctx)
	if c.stallLog {
		go stallLog(ctx, os.Stderr, "node-controller", nil)
	}
	if c.path != "lockstep" {
		c.ncGOGC, c.ncMemoryLimitMiB, c.bindsPerSecond, c.hollowProcs = 0, 0, 0, 1
	}
	if c.ncGOGC != 0 {
		debug.SetGCPercent(c.ncGOGC)
	}
	if c.ncMemoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(c.ncMemoryLimitMiB) << 20)
	}
	if c.hollowProcs <= 0 {
		c.hollowProcs = max(1, (c.nodes+1249)/1250)
	}
	var res *Result
	var err error
	switch c.path {
	case "lockstep":
		res, err = measure(ctx, c)
	case "kubernetes":
		res, err = measureKube(ctx, c)
	default:
		err = fmt.Errorf("--path %q: lockstep or kubernetes", c.path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-scale:", err)
		if ctx.Err() != nil {
			// Stopped by a signal: say so by the exit status, so that
			// the run is not taken for what the path holds.
			return result.ExitStopped
		}
		return 1
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(b))
	if out != "" {
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "lockstep-scale:", err)
			return 1
		}
	}
	if res.Failed != "" {
		// Its figures are written, but they are not the whole run's.
		fmt.Fprintln(os.Stderr, "lockstep-scale:", res.Failed)
		return 1
	}
	return 0
}

// parseFlags reads the run's shape from the command line, and the file to
// write the result to as well ("" for none).
func parseFlags() (config, string) {
	var c config
	flag.IntVar(&c.nodes, "nodes", 300, "hollow nodes")
	flag.IntVar(&c.podsPerNode, "pods-per-node", 5, "pods to place on each node, within --place-for")
	flag.IntVar(&c.kills, "kills", 3, "nodes killed one after the other, each in a process of its own")
	flag.DurationVar(&c.statusEvery, "status-every", 10*time.Second, "each node reports its whole status this often")
	flag.DurationVar(&c.heartbeat, "heartbeat", time.Second, "the nodes' heartbeat interval")
	flag.DurationVar(&c.ttl, "session-ttl", 3*time.Second, "how long a node's session lives without a heartbeat")
	flag.DurationVar(&c.grace, "node-grace", time.Second, "how long a node's kubelet may hold no session before the node is Unknown")
	flag.DurationVar(&c.steady, "steady", 30*time.Second, "steady-state window measured")
	flag.DurationVar(&c.placeFor, "place-for", 2*time.Minute, "the most time spent placing pods")
	flag.DurationVar(&c.registerFor, "register-for", 10*time.Minute, "the most time waited for every node to be Ready")
	flag.Float64Var(&c.readyFraction, "ready-fraction", 1, "lockstep path: the share of the nodes that must be Ready at once (the victims always) before pods are placed; below 1 where sessions lapse and recover now and then on a loaded machine")
	flag.IntVar(&c.bindConcurrency, "bind-concurrency", 16, "binds in flight at once")
	flag.Float64Var(&c.steadyBinds, "steady-binds-per-second", 10, "lockstep path: pods bound one at a time in the steady window, per second, for its bind → Running (at most one per node)")
	flag.IntVar(&c.startRate, "start-rate", 50, "lockstep path: nodes the hollow processes start per second, together")
	flag.IntVar(&c.hollowGOGC, "hollow-gogc", 400, "both paths: if not 0, the main hollow process's GOGC: the simulator's garbage collection, not the node controller's, whose stalls of tens of thousands of goroutines delayed heartbeats (0: Go's default, 100)")
	flag.BoolVar(&c.tlsResumption, "tls-resumption", true, "lockstep path: the hollow nodes resume their TLS sessions on new connections (false: a full handshake each)")
	flag.IntVar(&c.startTicks, "start-ticks", 20, "lockstep path: groups of nodes the hollow process starts per second, evenly apart (1: one group a second, all of whose heartbeats come at about the same instant)")
	flag.StringVar(&c.path, "path", "lockstep", "lockstep, or kubernetes: Leases and NodeStatus through the API server")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "lockstep path: the node controller persists Node objects to this API server")
	flag.DurationVar(&c.nodeRefresh, "node-refresh", nodeobjects.DefaultRefreshEvery, "lockstep path, with --kubeconfig: how often each Node object is rewritten unchanged")
	flag.Float64Var(&c.nodeWrites, "node-writes-per-second", nodeobjects.DefaultMaxWritesPerSecond, "lockstep path, with --kubeconfig: the node controller's budget of Node writes")
	flag.StringVar(&c.adminKubeconfig, "admin-kubeconfig", "", "an administrator of the API server: its /metrics, the Node objects' Ready condition, and the pods of the Kubernetes path")
	flag.StringVar(&c.watch, "watch", "", "name=pid,... of processes whose CPU and RSS to measure (the API server, etcd, kube-controller-manager)")
	flag.StringVar(&c.etcdMetrics, "etcd-metrics", "", "etcd's /metrics URL, for its count of durable writes")
	flag.BoolVar(&c.sourceAddrs, "source-addrs", true, "give each hollow node a source address of its own, 127.x.y.z")
	flag.StringVar(&c.clientCA, "client-ca-cert", "", "kubernetes path: the API server's client CA certificate, to issue each node's")
	flag.StringVar(&c.clientCAKey, "client-ca-key", "", "kubernetes path: that CA's key")
	flag.DurationVar(&c.leaseEvery, "lease-every", 10*time.Second, "kubernetes path: how often each node renews its Lease")
	flag.DurationVar(&c.nodeStatusEvery, "node-status-every", 5*time.Minute, "kubernetes path: how often each node patches its unchanged NodeStatus")
	flag.BoolVar(&c.killAtRegistration, "kill-at-registration", false, "kill the victims once the nodes are registered, not as the steady window starts: the time to notice them (some 40 s on the Kubernetes path) then overlaps the placement and the steady window, and the victims' transitions fall outside it")
	flag.StringVar(&c.placeProfile, "place-cpu-profile", "", "lockstep path: write the node controller's CPU profile while it places the pods to this file (go tool pprof)")
	flag.StringVar(&c.steadyProfiles, "steady-cpu-profiles", "", "lockstep path: write the CPU profiles of the steady window to this directory, node-controller.pprof and hollow.pprof (go tool pprof)")
	flag.IntVar(&c.ncGOGC, "node-controller-gogc", 400, "lockstep path: if not 0, the node controller's GOGC (this process's; 0: Go's default, 100), so that it collects less often while its heap is far below --node-controller-memory-limit")
	flag.IntVar(&c.ncMemoryLimitMiB, "node-controller-memory-limit", 1700, "lockstep path: if not 0, the node controller's soft memory limit in MiB (GOMEMLIMIT): it collects as often as it must to stay within it, below P9's 2 GiB")
	flag.Float64Var(&c.bindsPerSecond, "binds-per-second", 600, "lockstep path: if not 0, the placement binds at most this many pods a second, so that its burst does not starve the heartbeats")
	flag.IntVar(&c.hollowProcs, "hollow-processes", 0, "lockstep path: the processes the hollow nodes run in, each with its share of them, so that one process's garbage collection holds up only its share of the heartbeats, and for a shorter time (0: one per 1,250 nodes)")
	flag.BoolVar(&c.stallLog, "stall-log", false, "write to stderr, every second, what may hold heartbeats up in the node controller's process and the hollow nodes' (garbage collections, scheduling waits, slow heartbeats)")
	out := flag.String("out", "", "also write the JSON result to this file")
	flag.Parse()
	return c, *out
}

// Result is what one run measured (package result: make scale's harness
// reads and keeps it too).
type Result = result.Result

func measure(ctx context.Context, c config) (*Result, error) {
	res := &Result{Path: "lockstep", Nodes: c.nodes, PodsPerNode: c.podsPerNode, LoadStart: loadAvg(), SessionTTLSeconds: c.ttl.Seconds(),
		NodeGraceSeconds: c.grace.Seconds(), SourceAddrs: c.sourceAddrs, HollowGOGC: c.hollowGOGC,
		SteadyBindsPerSec: c.steadyBinds, StartRate: c.startRate, StartTicks: c.startTicks, TLSResumption: c.tlsResumption,
		NodeControllerGOGC: c.ncGOGC, NodeControllerMemoryLimitMiB: c.ncMemoryLimitMiB, PlaceBindsPerSecLimit: c.bindsPerSecond,
		HollowProcesses: c.hollowProcs}
	for _, rate := range startShares(c.startRate, c.hollowProcs) {
		group, _ := startGroups(rate, c.startTicks)
		res.HollowStartRates = append(res.HollowStartRates, rate)
		res.HollowStartGroupsPerSec = append(res.HollowStartGroupsPerSec, round(float64(rate)/float64(group), 2))
	}
	obs, err := newObserver(c.watch, c.etcdMetrics, c.adminKubeconfig)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockstep-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ca, err := certs.NewCA("lockstep-scale")
	if err != nil {
		return nil, err
	}
	caCert, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := ca.WriteCAFiles(caCert, caKey); err != nil {
		return nil, err
	}
	creds, err := credentials(ca, dir, "nodecontroller", "nc-0")
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()

	// The Node objects' writer, as cmd/nodecontroller runs it with
	// --kubeconfig.
	var objects *nodeobjects.Writer
	var onHealth func(*nhv2.NodeHealth)
	if c.kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		rc.QPS, rc.Burst = float32(c.nodeWrites)*2, int(c.nodeWrites)*2
		core, err := corev1client.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		if objects, err = nodeobjects.New(nodeobjects.Config{Nodes: core.Nodes(), RefreshEvery: c.nodeRefresh,
			MaxWritesPerSecond: c.nodeWrites, SpreadFromStart: true, Logger: quiet}); err != nil {
			return nil, err
		}
		onHealth = objects.Observe
		wctx, cancel := context.WithCancel(context.Background())
		written := make(chan struct{})
		go func() { defer close(written); objects.Run(wctx) }()
		defer func() { cancel(); <-written }()
	}
	// Every health change passes the flap count on its way to the Node
	// objects.
	flaps := &flapCounter{ready: map[string]bool{}}
	observeHealth := func(h *nhv2.NodeHealth) {
		flaps.observe(h)
		if onHealth != nil {
			onHealth(h)
		}
	}
	// The PodAssignment topic holds one key per pod: every pod the run
	// places, beyond the default bound of 100,000 keys at 5,000 nodes with
	// 30 pods each.
	pods := max(framework.DefaultTopicMaxKeys, 2*c.nodes*c.podsPerNode)
	podTopic := []framework.TopicOption{framework.WithMaxKeys(pods),
		framework.WithMaxBytes(pods * (framework.DefaultTopicMaxBytes / framework.DefaultTopicMaxKeys))}
	nc, err := nodecontroller.New(nodecontroller.Config{API: "v2", NodeGrace: c.grace, Logger: quiet, Registerer: reg, OnHealth: observeHealth, PodTopic: podTopic,
		Server: framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", SessionTTL: c.ttl, Heartbeat: c.heartbeat,
			DrainTimeout: time.Second, Logger: quiet, MTLS: creds, Metrics: framework.NewMetrics(reg)}})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = nc.Server().Serve(l) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = nc.Server().Shutdown(sctx)
		<-served
		nc.Close()
	}()
	url := "https://" + l.Addr().String()

	// The hollow nodes, and the nodes to kill, each alone in a process;
	// each process's nodes dial from a block of addresses of its own.
	start := time.Now()
	var children []*child
	defer func() {
		for _, ch := range children {
			ch.stop()
		}
	}()
	main, err := startHollows(url, caCert, caKey, c)
	children = append(children, main...)
	if err != nil {
		return nil, err
	}
	var victims []*child
	for i := range c.kills {
		v, err := startChild(url, caCert, caKey, c, 1, fmt.Sprintf("victim-%d-", i), 100+i)
		if err != nil {
			return nil, err
		}
		children, victims = append(children, v), append(victims, v)
	}
	total := c.nodes + c.kills
	lastSaid := time.Now()
	if err := waitFor(ctx, c.registerFor, 200*time.Millisecond, func() bool {
		ready := readyNodes(nc)
		created := int64(total)
		if objects != nil {
			created = objects.Stats().Creates.Load()
		}
		if time.Since(lastSaid) >= 10*time.Second {
			fmt.Fprintf(os.Stderr, "lockstep: %d of %d nodes Ready, %d Node objects created, after %.0f s\n", ready, total, created, time.Since(start).Seconds())
			lastSaid = time.Now()
		}
		return ready >= int(math.Ceil(c.readyFraction*float64(total))) && victimsReady(nc, c.kills) &&
			created >= int64(total) && (objects == nil || objects.Pending() == 0)
	}); err != nil {
		return nil, fmt.Errorf("%d of %d nodes registered: %w", readyNodes(nc), total, err)
	}
	res.RegisterSeconds = time.Since(start).Seconds()
	ready := readyNodes(nc)
	if c.readyFraction < 1 {
		res.ReadyAtRegistration = ready
	}
	fmt.Fprintf(os.Stderr, "lockstep: %d nodes registered in %.1f s, %d Ready\n", total, res.RegisterSeconds, ready)

	// Kills: SIGKILL to every victim at once, as the steady window starts
	// or once the nodes are registered, then the time until each is
	// Unknown, in the node controller and in the API server (their
	// transitions are one write each). kill returns what waits for them.
	kill := func() (wait func() error) {
		var mu sync.Mutex // guards res's kill figures
		return killVictims(victims, func(name string, killed time.Time) error {
			if err := waitFor(ctx, 2*time.Minute, 10*time.Millisecond, func() bool { _, lost := nc.IsLost(name); return lost }); err != nil {
				return fmt.Errorf("killed node %s not noticed: %w", name, err)
			}
			inMemory := time.Since(killed).Milliseconds()
			mu.Lock()
			res.KillNoticedInMemoryMs = append(res.KillNoticedInMemoryMs, inMemory)
			if obs.admin == nil {
				res.KillNoticedMs = append(res.KillNoticedMs, inMemory)
			}
			mu.Unlock()
			if obs.admin == nil {
				return nil
			}
			at, err := obs.nodeNotReady(ctx, name, 2*time.Minute)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			res.KillNoticedMs = append(res.KillNoticedMs, at.Sub(killed).Milliseconds())
			return nil
		})
	}
	killed := func() error { return nil }
	if c.killAtRegistration {
		killed = kill()
	}
	defer func() { _ = killed() }()

	// kube-controller-manager's one-time writes of the new Node objects
	// go on while the pods are placed.
	var settled func() time.Duration
	if obs.admin != nil {
		settled = obs.settling(ctx, 10*time.Minute)
		defer settled()
	}

	// Place the pods, as the sample scheduler binds them.
	sched, closeSched, err := schedulerClient(ca, dir, url)
	if err != nil {
		return nil, err
	}
	defer closeSched()
	start = time.Now()
	before := obs.snapshot(ctx)
	stopProfile, err := profile(c.placeProfile)
	if err != nil {
		return nil, err
	}
	hsPlacing := creds.Handshakes()
	res.PodsPlaced = place(ctx, sched, c)
	stopProfile()
	res.BindsPerSec = round(float64(res.PodsPlaced)/time.Since(start).Seconds(), 1)
	fmt.Fprintf(os.Stderr, "lockstep: %d pods bound in %.1f s (%.0f binds/s)\n", res.PodsPlaced, time.Since(start).Seconds(), res.BindsPerSec)
	if res.PodsNotRunning, err = waitRunning(ctx, res.PodsPlaced, func() int { return running(nc) }); err != nil {
		return nil, err
	}
	res.PlaceSeconds = time.Since(start).Seconds()
	res.PlacementPodWritesPerSec = podWritesPerSec(obs.between(before, obs.snapshot(ctx)).WritesPerSec)
	res.TLSFullHandshakesPlacing = int64(creds.Handshakes().ServerFull - hsPlacing.ServerFull)
	fmt.Fprintf(os.Stderr, "lockstep: %d pods placed and %d Running in %.1f s\n", res.PodsPlaced, res.PodsPlaced-res.PodsNotRunning, res.PlaceSeconds)
	p50, p99, _, _ := bindToRunning(nc, placedPrefix)
	res.BindToRunningP50Ms, res.BindToRunningP99Ms = ms(p50), ms(p99)

	// The steady state: heartbeats, periodic statuses and the Node
	// objects' refresh only, once kube-controller-manager is done with
	// the new Node objects.
	if settled != nil {
		fmt.Fprintf(os.Stderr, "lockstep: Node objects settled %.0f s after the nodes registered\n", settled().Seconds())
	}
	obs.procs["node-controller"], obs.procs["hollow-nodes"] = []int{os.Getpid()}, main.pids()
	reports := statusReports(reg)
	var objStart [5]int64
	if objects != nil {
		st := objects.Stats()
		objStart = [5]int64{st.Creates.Load(), st.Transitions.Load(), st.Refreshes.Load(), st.Failures.Load(), st.WriteTime.Load()}
	}
	lapses, flapped := counter(reg, "lockstep_session_lapses_total"), flaps.count()
	main.steady()
	if !c.killAtRegistration {
		killed = kill()
	}
	probes := steadyBinds(ctx, sched, c)
	var stopProfile2 func()
	if c.steadyProfiles != "" {
		if stopProfile2, err = profile(filepath.Join(c.steadyProfiles, "node-controller.pprof")); err != nil {
			probes()
			return nil, err
		}
	}
	err = steady(ctx, obs, c.steady, res)
	// What the window counts is read as it ends: the kills' notice and the
	// wait for the window's pods below run past it.
	main.endSteady()
	if stopProfile2 != nil {
		stopProfile2()
	}
	probes()
	res.StatusReportsPerSec = round(float64(statusReports(reg)-reports)/res.SteadySeconds, 2)
	if objects != nil {
		st := objects.Stats()
		res.NodeObjects = map[string]int64{"creates": st.Creates.Load() - objStart[0], "transitions": st.Transitions.Load() - objStart[1],
			"refreshes": st.Refreshes.Load() - objStart[2], "failures": st.Failures.Load() - objStart[3]}
		// Their mean latency, failed writes included (the writer times
		// them too): the writer's workers make at most workers / latency
		// writes a second.
		if n := res.NodeObjects["creates"] + res.NodeObjects["transitions"] + res.NodeObjects["refreshes"] + res.NodeObjects["failures"]; n > 0 {
			res.NodeObjects["meanWriteMicros"] = (st.WriteTime.Load() - objStart[4]) / n / 1000
		}
	}
	res.SteadyLapses, res.SteadyFlaps = int64(counter(reg, "lockstep_session_lapses_total")-lapses), flaps.count()-flapped
	if kerr := killed(); err == nil {
		err = kerr
	}
	if err != nil {
		return nil, err
	}
	if !c.killAtRegistration {
		res.SteadyLapses -= int64(len(victims)) // their sessions lapsed in the window, as they should
	}
	// The pods bound in the window reach Running, or do not within 30 s.
	// (A bind whose answer came after the window ended counts: the node
	// controller holds it.)
	_ = waitFor(ctx, 30*time.Second, 500*time.Millisecond, func() bool { _, _, n, bound := bindToRunning(nc, steadyPrefix); return n >= bound })
	p50, p99, n, bound := bindToRunning(nc, steadyPrefix)
	res.SteadyBinds = bound
	res.SteadyBindToRunningP50Ms, res.SteadyBindToRunningP99Ms, res.SteadyNotRunning = ms(p50), ms(p99), bound-n
	res.Flaps = flaps.count()
	fmt.Fprintf(os.Stderr, "lockstep: steady window: %d binds, bind → Running p50 %.0f ms, p99 %.0f ms (%d not Running); %d live sessions lapsed, %d live nodes flapped (%d over the run)\n",
		res.SteadyBinds, res.SteadyBindToRunningP50Ms, res.SteadyBindToRunningP99Ms, res.SteadyNotRunning, res.SteadyLapses, res.SteadyFlaps, res.Flaps)
	res.ResyncsRequested, res.Resumes = int64(counter(reg, "sample_nodecontroller_resyncs_requested_total")), int64(counter(reg, "sample_nodecontroller_resumes_total"))
	res.HollowKiBPerNode = round(res.RSSMiB["hollow-nodes"]*1024/float64(c.nodes), 1)
	slices.Sort(res.KillNoticedMs)
	slices.Sort(res.KillNoticedInMemoryMs)
	res.KillNoticedP99Ms = p99ms(res.KillNoticedMs)
	res.LostLiveNodes = len(nc.Lost()) - len(victims)

	// The hollow processes' heartbeat figures, as they report them on
	// stopping.
	hs := creds.Handshakes()
	res.TLSFullHandshakes, res.TLSResumedHandshakes = int64(hs.ServerFull), int64(hs.ServerResumed)
	keepBeats(res, main.stop(), len(main))
	res.LoadEnd, res.LoadMax = loadAvg(), loadMax()
	return res, nil
}

// steady measures the window of the steady state into res: durable
// writes, CPU and RSS.
func steady(ctx context.Context, obs *observer, window time.Duration, res *Result) error {
	a := obs.snapshot(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	b := obs.snapshot(ctx)
	u := obs.between(a, b)
	res.SteadySeconds = round(b.at.Sub(a.at).Seconds(), 2)
	res.EtcdPutsPerSec = round(u.EtcdPutsPerSec, 3)
	res.WritesPerSec = u.WritesPerSec
	res.NodeWritesPerSec = nodeWritesPerSec(u.WritesPerSec)
	res.PodWritesPerSec = podWritesPerSec(u.WritesPerSec)
	res.Cores = u.Cores
	res.RSSMiB, res.PeakRSSMiB = obs.memory()
	fmt.Fprintf(os.Stderr, "%s: steady %.0f s: %.1f etcd puts/s, %.1f node writes/s, cores %v\n", res.Path, res.SteadySeconds,
		res.EtcdPutsPerSec, res.NodeWritesPerSec, res.Cores)
	return nil
}

// credentials writes a certificate for lockstep://component/name from ca
// and loads it as mutual TLS credentials.
func credentials(ca *certs.CA, dir, component, name string) (*framework.Credentials, error) {
	cert, err := ca.Issue(certs.Spec{Component: component, Name: name, Server: true, Lifetime: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	certFile, keyFile, caFile, err := ca.WriteFiles(dir, component, cert)
	if err != nil {
		return nil, err
	}
	return framework.LoadCredentials(framework.MTLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: caFile})
}

// schedulerClient is a nodehealth client presenting the certificate of
// lockstep://scheduler/scheduler-0.
func schedulerClient(ca *certs.CA, dir, url string) (nhv2.Client, func(), error) {
	creds, err := credentials(ca, dir, "scheduler", "scheduler-0")
	if err != nil {
		return nil, nil, err
	}
	tr := creds.Transport("")
	c, err := framework.NewClient(nhv2.Contract, framework.ClientConfig{Component: "scheduler", Release: "1.31.0",
		Endpoints: []string{url}, Transport: tr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, nil, err
	}
	return nhv2.NewClient(c), func() { _ = c.Close(); tr.CloseIdleConnections() }, nil
}

// place binds podsPerNode pods to each node, round after round over the
// nodes, with bindConcurrency binds in flight, until done or placeFor
// passed; it returns how many were bound.
func place(ctx context.Context, sched nhv2.Client, c config) int {
	ctx, cancel := context.WithTimeout(ctx, c.placeFor)
	defer cancel()
	var next, bound atomic.Int64
	total := int64(c.nodes * c.podsPerNode)
	start := time.Now()
	var wg sync.WaitGroup
	for range c.bindConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				if c.bindsPerSecond > 0 && !sleepUntil(ctx, start.Add(time.Duration(float64(i)/c.bindsPerSecond*float64(time.Second)))) {
					return
				}
				node := fmt.Sprintf("node-%03d", i%int64(c.nodes))
				uid := fmt.Sprintf("%s%d", placedPrefix, i)
				_, err := sched.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, NodeName: node,
					Requests: nhv2.PodRequests{CPUMillis: 10, MemoryBytes: 16 << 20}})
				if err == nil {
					bound.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(bound.Load())
}

// sleepUntil waits until t, reporting false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// profile starts a CPU profile written to path, if not "", and returns
// what stops it.
func profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// victimsReady reports whether every node to be killed is Ready.
func victimsReady(nc *nodecontroller.NodeController, kills int) bool {
	ready := map[string]bool{}
	for _, h := range nc.Health() {
		ready[h.NodeName] = h.State == nhv2.NodeHealthStateReady
	}
	for i := range kills {
		if !ready[fmt.Sprintf("victim-%d-000", i)] {
			return false
		}
	}
	return true
}

func readyNodes(nc *nodecontroller.NodeController) int {
	n := 0
	for _, h := range nc.Health() {
		if h.State == nhv2.NodeHealthStateReady {
			n++
		}
	}
	return n
}

func running(nc *nodecontroller.NodeController) int {
	n := 0
	for _, p := range nc.Pods() {
		if p.Phase == nsv2.PodStatusPhaseRunning {
			n++
		}
	}
	return n
}

// The pods' names say when they were bound: placed all at once after the
// nodes registered, or one at a time in the steady window.
const (
	placedPrefix = "pod-"
	steadyPrefix = "steady-"
)

// bindToRunning is the p50 and p99 over the pods named with prefix of the
// time from their binding (their first phase, Pending) to their kubelet
// reporting them Running, how many were reported Running, and how many
// the node controller holds bound.
func bindToRunning(nc *nodecontroller.NodeController, prefix string) (p50, p99 time.Duration, n, bound int) {
	var d []time.Duration
	for _, p := range nc.Pods() {
		if len(p.Phases) == 0 || !strings.HasPrefix(p.UID, prefix) {
			continue
		}
		bound++
		for _, ph := range p.Phases {
			if ph.Phase == nsv2.PodStatusPhaseRunning {
				d = append(d, ph.At.Sub(p.Phases[0].At))
				break
			}
		}
	}
	p50, p99 = quantiles(d)
	return p50, p99, len(d), bound
}

// steadyBinds binds pods one at a time, c.steadyBinds a second, to the
// nodes in turn (one more pod each at most, beyond those placed), until
// the returned function is called; it returns how many were bound. Their
// bind → Running is what a running cluster's pods see, apart from the
// placement's burst of binds.
func steadyBinds(ctx context.Context, sched nhv2.Client, c config) (stop func() int) {
	if c.steadyBinds <= 0 {
		return func() int { return 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	var bound atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Duration(float64(time.Second) / c.steadyBinds))
		defer t.Stop()
		for i := 0; i < c.nodes; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			uid := fmt.Sprintf("%s%d", steadyPrefix, i)
			if _, err := sched.Bind(ctx, &nhv2.Binding{Pod: nhv2.PodRef{Namespace: "default", Name: uid, UID: uid}, NodeName: fmt.Sprintf("node-%03d", i),
				Requests: nhv2.PodRequests{CPUMillis: 10, MemoryBytes: 16 << 20}}); err == nil {
				bound.Add(1)
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		return int(bound.Load())
	}
}

// flapCounter counts the live nodes (not the victims) whose health went
// from Ready to anything else: a session TTL too short for the machine's
// load shows there. It is called under the node controller's lock.
type flapCounter struct {
	mu    sync.Mutex
	ready map[string]bool
	flaps int64
}

func (f *flapCounter) observe(h *nhv2.NodeHealth) {
	if strings.HasPrefix(h.NodeName, "victim-") {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ready := h.State == nhv2.NodeHealthStateReady
	if f.ready[h.NodeName] && !ready {
		f.flaps++
	}
	f.ready[h.NodeName] = ready
}

func (f *flapCounter) count() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flaps
}

// keepBeats keeps in r the hollow nodes' heartbeat figures, as their
// procs processes reported them on stopping (st, merged). Where fewer
// processes reported than ran (one killed after not stopping in time), or
// their nodes do not add up to the run's, the figures are some of the
// nodes' only: the run is marked failed, saying how many reported, so
// that it is not taken for every node's, and its figures are kept beside.
func keepBeats(r *Result, st childStats, procs int) {
	r.HeartbeatP99Ms, r.Heartbeats = st.HeartbeatP99Ms, st.Heartbeats
	r.SteadyHeartbeats, r.SteadyHeartbeatP50Ms, r.SteadyHeartbeatP99Ms, r.SteadyHeartbeatMaxMs =
		st.SteadyHeartbeats, st.SteadyHeartbeatP50Ms, st.SteadyHeartbeatP99Ms, st.SteadyHeartbeatMaxMs
	if st.Processes != procs || st.Nodes != r.Nodes {
		r.Failed = fmt.Sprintf("%d of %d hollow processes reported their figures, for %d of %d nodes: the heartbeat figures are not every node's",
			st.Processes, procs, st.Nodes, r.Nodes)
	}
}

// loadPeak is the highest 1-minute load average sampled (sampleLoad).
var loadPeak struct {
	sync.Mutex
	max float64
}

// sampleLoad samples the machine's 1-minute load average every 5 s until
// ctx ends, keeping the highest for loadMax.
func sampleLoad(ctx context.Context) {
	for {
		if f := strings.Fields(loadAvg()); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				loadPeak.Lock()
				loadPeak.max = max(loadPeak.max, v)
				loadPeak.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// loadMax is the highest 1-minute load average sampled so far.
func loadMax() float64 {
	loadPeak.Lock()
	defer loadPeak.Unlock()
	return loadPeak.max
}

// statusReports counts the status reports the node controller received,
// from its own metric.
func statusReports(reg *prometheus.Registry) int64 {
	mfs, _ := reg.Gather()
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "sample_nodecontroller_reports_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "status" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int64(n)
}

// waitRunning waits until placed pods are Running (count says how many
// are), or until their count has not grown for a minute, or for 10
// minutes, and returns how many were not Running then: a pod bound to a
// node whose kubelet lost its session on the starved machine may wait
// long, and says nothing of the others, whose bind → Running is measured
// all the same. Only ctx's end is an error.
func waitRunning(ctx context.Context, placed int, count func() int) (notRunning int, err error) {
	deadline := time.Now().Add(10 * time.Minute)
	last, grew := count(), time.Now()
	for last < placed && time.Now().Before(deadline) && time.Since(grew) < time.Minute {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		if n := count(); n > last {
			last, grew = n, time.Now()
		}
	}
	if last < placed {
		fmt.Fprintf(os.Stderr, "%d of %d pods Running: no more within a minute\n", last, placed)
	}
	return max(0, placed-last), nil
}

// counter is the value of a counter of reg, summed over its series (a
// labelled one, such as lapses by contract, counts every label's).
func counter(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// waitFor polls cond every poll until it holds, ctx ends or timeout
// passes.
func waitFor(ctx context.Context, timeout, poll time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func mib(b uint64) float64       { return float64(b) / (1 << 20) }

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuOf is a process's user and system CPU so far (/proc/<pid>/stat).
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// memOf is a process's RSS and peak RSS (/proc/<pid>/status).
func memOf(pid int) (rss, hwm uint64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kib, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = kib << 10
		case "VmHWM":
			hwm = kib << 10
		}
	}
	return rss, hwm
}

// child is a process of hollow nodes (this program's hollow mode).
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	once   sync.Once
	final  childStats
}

// childStats is what a hollow process reports when it stops: its
// heartbeats over its whole life (the start's handshakes included) and
// over the steady window (from the parent's steadyLine to its
// steadyEndLine).
type childStats struct {
	// Processes is how many processes' figures these are: 1 for one that
	// reported them, 0 for one that did not; summed by mergeStats.
	Processes            int     `json:"-"`
	Nodes                int     `json:"nodes"`
	Heartbeats           int64   `json:"heartbeats"`
	HeartbeatP99Ms       float64 `json:"heartbeatP99Ms"`
	SteadyHeartbeats     int64   `json:"steadyHeartbeats"`
	SteadyHeartbeatP50Ms float64 `json:"steadyHeartbeatP50Ms"`
	SteadyHeartbeatP99Ms float64 `json:"steadyHeartbeatP99Ms"`
	SteadyHeartbeatMaxMs float64 `json:"steadyHeartbeatMaxMs"`
	StatusReports        int64   `json:"statusReports"`
	PodReports           int64   `json:"podReports"`
	Failed               int64   `json:"failedReports"`
	// AllCounts and WindowCounts are the histograms of the whole life's
	// heartbeats and of the window's (kubelet.Latency.Counts), so that
	// the quantiles of several processes' heartbeats can be read together.
	AllCounts    []int64 `json:"allCounts,omitempty"`
	WindowCounts []int64 `json:"windowCounts,omitempty"`
}

// beats fills the heartbeat figures of cs from all (every heartbeat the
// process timed) and the window's snapshots of it: w.start as the steady
// window began (nil if it never did), w.end as it ended (nil if the parent
// stopped the process without saying so, when the window runs to the end).
func (cs *childStats) beats(all *kubelet.Latency, w *steadyWindow) {
	cs.Heartbeats, cs.HeartbeatP99Ms = all.Count(), ms(all.Quantile(0.99))
	cs.AllCounts = all.Counts()
	if w.start == nil {
		return
	}
	end := all
	if w.end != nil {
		end = w.end
	}
	in := end.Snapshot()
	in.Sub(w.start)
	w2 := in
	cs.WindowCounts = w2.Counts()
	cs.SteadyHeartbeats, cs.SteadyHeartbeatP50Ms, cs.SteadyHeartbeatP99Ms, cs.SteadyHeartbeatMaxMs =
		w2.Count(), ms(w2.Quantile(0.5)), ms(w2.Quantile(0.99)), ms(w2.Quantile(1))
}

// steadyLine and steadyEndLine are the lines a parent writes to a hollow
// process's stdin as the steady window begins and ends.
const (
	steadyLine    = "steady"
	steadyEndLine = "steady-end"
)

// steadyWindow is a hollow process's heartbeat histogram as the steady
// window began and ended.
type steadyWindow struct{ start, end *kubelet.Latency }

// awaitParent reads the parent's lines on stdin until it closes: at
// steadyLine it calls begin, at steadyEndLine end.
func awaitParent(begin, end func()) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case steadyLine:
			begin()
		case steadyEndLine:
			end()
		}
	}
}

// steady tells the process that the steady window begins: its heartbeats
// from now on are also counted apart.
func (ch *child) steady() {
	_, _ = io.WriteString(ch.stdin, steadyLine+"\n")
}

// endSteady tells the process that the steady window ends: heartbeats
// from now on are no longer the window's.
func (ch *child) endSteady() {
	_, _ = io.WriteString(ch.stdin, steadyEndLine+"\n")
}

// hollows are the processes of the hollow nodes that are not killed,
// each running its share of them: one, or --hollow-processes.
type hollows []*child

// startHollows starts the hollow nodes node-000 … in c.hollowProcs
// processes, each with its share of the nodes, of the start rate
// (startShares) and of the source addresses (blocks 1, 2, …).
func startHollows(url, caCert, caKey string, c config) (hollows, error) {
	procs := max(1, c.hollowProcs)
	shares := startShares(c.startRate, procs)
	var hs hollows
	for k := range procs {
		var args []string
		if c.hollowGOGC != 0 {
			args = append(args, "-gogc", strconv.Itoa(c.hollowGOGC))
		}
		if c.steadyProfiles != "" {
			name := "hollow.pprof"
			if k > 0 {
				name = fmt.Sprintf("hollow-%d.pprof", k)
			}
			args = append(args, "-steady-cpu-profile", filepath.Join(c.steadyProfiles, name))
		}
		if c.stallLog {
			args = append(args, "-stall-log")
		}
		first, last := k*c.nodes/procs, (k+1)*c.nodes/procs
		ck := c
		ck.startRate = shares[k]
		args = append(args, "-first", strconv.Itoa(first), "-name", fmt.Sprintf("hollow-%d", k))
		h, err := startChild(url, caCert, caKey, ck, last-first, "node-", 1+k, args...)
		if err != nil {
			return hs, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// startShares is each of procs processes' share of the start rate: rate
// over procs, the remainder to the first processes, so that together they
// start rate nodes a second (each at least one: more than rate where rate
// is below procs).
func startShares(rate, procs int) []int {
	out := make([]int, max(1, procs))
	for k := range out {
		out[k] = rate / len(out)
		if k < rate%len(out) {
			out[k]++
		}
		out[k] = max(1, out[k])
	}
	return out
}

// startGroups is how a hollow process that starts rate nodes a second in
// ticks groups a second does it: group nodes at once, one group every
// tick. Where rate is not a multiple of ticks, the groups are rounded up,
// so fewer than ticks start a second (rate / group), one node each where
// rate is below ticks.
func startGroups(rate, ticks int) (group int, tick time.Duration) {
	rate, ticks = max(1, rate), max(1, ticks)
	group = (rate + ticks - 1) / ticks
	return group, time.Duration(float64(time.Second) * float64(group) / float64(rate))
}

// steady, endSteady: as child's, for every process.
func (hs hollows) steady() {
	for _, h := range hs {
		h.steady()
	}
}

func (hs hollows) endSteady() {
	for _, h := range hs {
		h.endSteady()
	}
}

func (hs hollows) pids() []int {
	var pids []int
	for _, h := range hs {
		pids = append(pids, h.cmd.Process.Pid)
	}
	return pids
}

// stop stops every process and returns their figures together: the
// heartbeat quantiles of all their heartbeats, from their histograms.
func (hs hollows) stop() childStats {
	var sts []childStats
	for _, h := range hs {
		sts = append(sts, h.stop())
	}
	return mergeStats(sts)
}

// mergeStats is the figures of several hollow processes together, with
// how many of them reported any.
func mergeStats(sts []childStats) childStats {
	var sum childStats
	var all, window kubelet.Latency
	for _, st := range sts {
		if len(st.AllCounts) > 0 {
			sum.Processes++ // one that reported (a process killed before it did reports nothing)
		}
		sum.Nodes += st.Nodes
		sum.StatusReports += st.StatusReports
		sum.PodReports += st.PodReports
		sum.Failed += st.Failed
		all.AddCounts(st.AllCounts)
		window.AddCounts(st.WindowCounts)
	}
	sum.Heartbeats, sum.HeartbeatP99Ms = all.Count(), ms(all.Quantile(0.99))
	sum.SteadyHeartbeats, sum.SteadyHeartbeatP50Ms, sum.SteadyHeartbeatP99Ms, sum.SteadyHeartbeatMaxMs =
		window.Count(), ms(window.Quantile(0.5)), ms(window.Quantile(0.99)), ms(window.Quantile(1))
	return sum
}

func startChild(url, caCert, caKey string, c config, nodes int, prefix string, block int, more ...string) (*child, error) {
	if !c.sourceAddrs {
		block = 0
	}
	return startProcess(append([]string{"hollow", "-url", url, "-ca-cert", caCert, "-ca-key", caKey, "-nodes", strconv.Itoa(nodes),
		"-prefix", prefix, "-status-every", c.statusEvery.String(), "-source-block", strconv.Itoa(block),
		"-start-rate", strconv.Itoa(c.startRate), "-start-ticks", strconv.Itoa(c.startTicks),
		"-tls-resumption=" + strconv.FormatBool(c.tlsResumption)}, more...)...)
}

// startProcess starts this program in one of its child modes.
func startProcess(args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	// Killed with this process if it dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, stdin: in, stdout: bufio.NewReader(out)}, nil
}

// kill ends the process with SIGKILL: its nodes fall silent.
func (ch *child) kill() {
	ch.once.Do(func() {
		_ = ch.cmd.Process.Kill()
		_ = ch.cmd.Wait()
	})
}

// stop asks the process to stop (its stdin closes), reads its figures and
// waits for it to close its nodes' sessions and exit; if it has not
// exited 30 s after being asked, it is killed.
func (ch *child) stop() childStats {
	ch.once.Do(func() {
		_ = ch.stdin.Close()
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			line, err := ch.stdout.ReadBytes('\n')
			if err == nil {
				_ = json.Unmarshal(line, &ch.final)
			}
			_ = ch.cmd.Wait()
		}()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = ch.cmd.Process.Kill()
			<-exited
		}
	})
	return ch.final
}

// hollow is the hollow nodes' process: it runs them until its stdin
// closes (a steadyLine on it marks the steady window's start), then
// prints its figures as one JSON line and closes their sessions.
func hollow(args []string) int {
	fs := flag.NewFlagSet("hollow", flag.ExitOnError)
	url := fs.String("url", "", "the node controller")
	caCert := fs.String("ca-cert", "", "CA certificate")
	caKey := fs.String("ca-key", "", "CA key, to issue each node its certificate")
	nodes := fs.Int("nodes", 1, "nodes")
	prefix := fs.String("prefix", "node-", "node name prefix")
	statusEvery := fs.Duration("status-every", 10*time.Second, "status period")
	block := fs.Int("source-block", 0, "if not 0, node i dials from 127.<block>.x.y")
	startRate := fs.Int("start-rate", 100, "nodes started per second")
	startTicks := fs.Int("start-ticks", 20, "groups of nodes started per second, evenly apart")
	steadyProfile := fs.String("steady-cpu-profile", "", "write the process's CPU profile from the steady window's start to its end to this file")
	resume := fs.Bool("tls-resumption", true, "nodes resume their TLS sessions on new connections; false: every connection a full handshake")
	gogc := fs.Int("gogc", 0, "if not 0, the process's GOGC (its garbage collector's target heap growth, in percent)")
	stalls := fs.Bool("stall-log", false, "write to stderr, every second, what may hold the heartbeats up in this process, and how many took over 100 ms")
	firstNode := fs.Int("first", 0, "the number of the first node (node names are prefix and number)")
	name := fs.String("name", "hollow", "the process's name in its stall log")
	_ = fs.Parse(args)
	if *gogc != 0 {
		debug.SetGCPercent(*gogc)
	}
	ca, err := certs.LoadCA(*caCert, *caKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hollow:", err)
		return 1
	}
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	set := &hollowSet{}
	stop := func() { cancel(); set.close() }
	if *stalls {
		go stallLog(ctx, os.Stderr, *name, func() int64 { return set.beats().Above(100 * time.Millisecond) })
	}
	// The nodes start spread over time, as a cluster's machines come up:
	// thousands of handshakes at once would starve the heartbeats of the
	// nodes already up on a loaded machine. They start in -start-ticks
	// groups a second of -start-rate/-start-ticks nodes each, so that few
	// handshake at once, and each node's heartbeats, which keep the phase
	// of the second its session began in, spread over the second rather
	// than coming together (with 1 tick, every second's group beats at
	// about the same instant).
	nodeTLS := kubelet.NodeCertificates(ca, ca.Pool(), "")
	if !*resume {
		issue := nodeTLS
		nodeTLS = func(node string) (*tls.Config, error) {
			tc, err := issue(node)
			if err == nil {
				tc.ClientSessionCache = nil
			}
			return tc, err
		}
	}
	group, tick := startGroups(*startRate, *startTicks)
	t0 := time.Now()
	for g, first := 0, 0; first < *nodes; g, first = g+1, first+group {
		time.Sleep(time.Until(t0.Add(time.Duration(g) * tick)))
		var source func(int) net.IP
		if *block != 0 {
			source = func(i int) net.IP { return sourceAddr(*block, first+i) }
		}
		k, err := kubelet.New(kubelet.Config{API: "v2", Nodes: min(group, *nodes-first), FirstNode: *firstNode + first, NodePrefix: *prefix,
			ChangeEvery: -1, StatusEvery: *statusEvery, NodeTLS: nodeTLS, SourceAddr: source, Logger: quiet,
			Client: framework.ClientConfig{Component: "kubelet", Release: "1.31.0", Endpoints: []string{*url}, Logger: quiet}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "hollow:", err)
			stop()
			return 1
		}
		set.run(ctx, k)
	}
	var window steadyWindow
	stopProfile := func() {}
	awaitParent(func() {
		window.start = set.beats()
		if stop, err := profile(*steadyProfile); err == nil {
			stopProfile = stop
		} else {
			fmt.Fprintln(os.Stderr, "hollow:", err)
		}
	}, func() {
		window.end = set.beats()
		stopProfile()
		stopProfile = func() {}
	})
	stopProfile()
	cs := set.stats()
	cs.Nodes = *nodes
	cs.beats(set.beats(), &window)
	b, _ := json.Marshal(cs)
	fmt.Println(string(b))
	stop()
	return 0
}

// hollowSet is a hollow process's kubelets, each running its group of
// nodes; its stall log reads them as they start.
type hollowSet struct {
	mu sync.Mutex
	ks []*kubelet.Kubelet
	wg sync.WaitGroup
}

// run runs k until ctx ends.
func (h *hollowSet) run(ctx context.Context, k *kubelet.Kubelet) {
	h.mu.Lock()
	h.ks = append(h.ks, k)
	h.mu.Unlock()
	h.wg.Add(1)
	go func() { defer h.wg.Done(); k.Run(ctx) }()
}

// close waits for every kubelet to stop running (its ctx ended), then
// closes their sessions.
func (h *hollowSet) close() {
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.ks {
		k.Close()
	}
}

// beats is every heartbeat the kubelets timed, in one histogram.
func (h *hollowSet) beats() *kubelet.Latency {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all kubelet.Latency
	for _, k := range h.ks {
		all.Add(&k.Stats().Heartbeats)
	}
	return &all
}

// stats is the kubelets' reports, sent and failed.
func (h *hollowSet) stats() childStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cs childStats
	for _, k := range h.ks {
		st := k.Stats()
		cs.StatusReports += st.StatusReports.Load()
		cs.PodReports += st.PodReports.Load()
		cs.Failed += st.Failed.Load()
	}
	return cs
}

// killVictims sends SIGKILL to every victim at once and returns what waits
// until notice has seen each one go. Both paths kill this way; only how a
// kill is noticed differs. notice runs once per victim, concurrently, and
// guards what it records itself.
func killVictims(victims []*child, notice func(name string, killed time.Time) error) (wait func() error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i, v := range victims {
		name := fmt.Sprintf("victim-%d-000", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			killed := time.Now()
			v.kill()
			if err := notice(name, killed); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}
