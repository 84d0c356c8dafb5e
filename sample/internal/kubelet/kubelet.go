// Package kubelet is the sample's node agent: one process simulates many
// nodes ("hollow nodes", as Kubernetes' kubemark calls them), each with its
// own lockstep session with the node controller (its liveness). Without
// per-node certificates they share one HTTP transport and one heartbeat
// sender, so a thousand nodes cost one heartbeat request per interval; with
// them (Config.NodeTLS) each node dials with its own certificate, as a real
// kubelet does, so each has its own connections and heartbeats alone. Each node
// watches the node controller's PodAssignment topic and runs the pods
// assigned to it (Pending, then Running), stops those whose desired state
// is Stopped or whose assignment went; it reports its whole status when it
// changes and its pods' statuses in batches, and everything again when the
// node controller asks for a resync.
package kubelet

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/framework"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	nsv21 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2_1"
)

// Config configures a [Kubelet].
type Config struct {
	// API is the nodestatus generation spoken, "v1" (1.0.0), "v2"
	// (2.0.0) or "v2.1" (2.1.0, which adds the node's kernel version and
	// speaks 2.0.0 too, with no fork mode: it derives from 2.0.0
	// compatibly); with Fork, v2 also speaks 1.0.0 to an old node
	// controller.
	API  string
	Fork bool
	// Nodes is how many nodes the process simulates; default 1. Their
	// names are NodePrefix (default "node-") and a three-digit number
	// counting from FirstNode.
	Nodes      int
	NodePrefix string
	FirstNode  int
	// Client is the base of every node's client configuration: component,
	// release, endpoints or source, TLS, observer, interceptors. Each node
	// gets its own instance; all share Client.Transport (default
	// [framework.NewTransport]) and one [framework.Heartbeats].
	Client framework.ClientConfig
	// ChangeEvery is the mean time between simulated changes of a node (a
	// pod starts, restarts or ends, a pressure condition comes or goes);
	// default 2s, negative for none.
	ChangeEvery time.Duration
	// Labels and Taints are every node's, as the kubelet registers them
	// (--node-labels, --register-with-taints); each node also gets the
	// labels the real kubelet sets itself: kubernetes.io/hostname (its
	// name), kubernetes.io/os and kubernetes.io/arch.
	Labels map[string]string
	Taints []corev1.Taint
	// CPUMillis is each node's CPU capacity in millicores; default 4000.
	// Its allocatable is SystemReservedCPUMillis less, as a kubelet's
	// --system-reserved keeps some for the node's own daemons.
	CPUMillis int64
	// StartAfter is how long an assigned pod stays Pending before it runs
	// (its image pulled, its containers started); default 100ms.
	StartAfter time.Duration
	// PodsEnd makes running pods end now and then among the simulated
	// changes, as a batch job's pods do: reported Succeeded, after which
	// the node controller lets their assignment go.
	PodsEnd bool
	// NodeTLS, if set, gives each node its own TLS client configuration,
	// presenting the certificate that names it (lockstep://kubelet/<node>)
	// as a real kubelet presents its own: each node then has a transport
	// and connections of its own, and its heartbeats travel alone, one
	// request per node per interval, since a request carries one identity.
	// Nil: every node shares Client's transport (plain HTTP, or one
	// identity for the whole simulator, granted a node set).
	NodeTLS func(node string) (*tls.Config, error)
	// SourceAddr, with NodeTLS, gives node i (counting from 0 over the
	// process's nodes) the local address its connections are made from,
	// as each real kubelet dials from its own machine's address: a server
	// bounds the connections of one source address (the framework's
	// Limits.ConnsPerSource), which thousands of nodes on one address
	// would exceed. Nil, or a nil address: the kernel's choice. Such a
	// node dials with a plain net.Dialer, not the framework's, so its
	// connections do not tell the process's probers when the server
	// closes them: the node learns it from its next request instead.
	SourceAddr func(i int) net.IP
	// StatusEvery, if positive, makes each node report its whole status
	// at least that often even when nothing changed, as a kubelet reports
	// its NodeStatus periodically (the first report of each node comes at
	// a random point of the first period, so the nodes' reports spread).
	// Zero: a node reports its status only when it changes.
	StatusEvery time.Duration
	// CallTimeout bounds each report, including the time it blocks waiting
	// for a compatible node controller; default 30s.
	CallTimeout time.Duration
	// Registerer, if set, receives the kubelet's own metrics.
	Registerer prometheus.Registerer
	// Logger receives its logs; default slog.Default().
	Logger *slog.Logger
}

// SystemReservedCPUMillis is the CPU each node keeps from pods.
const SystemReservedCPUMillis = 200

// Kubelet simulates the nodes of one process.
type Kubelet struct {
	cfg        Config
	logger     *slog.Logger
	nodes      []*simNode
	heartbeats *framework.Heartbeats

	reports *prometheus.CounterVec
	resyncs prometheus.Counter
	stats   Stats
	// transports are the nodes' own transports (Config.NodeTLS), whose
	// idle connections Close closes.
	transports []*http.Transport
}

// Stats counts what the kubelet did.
type Stats struct {
	// StatusReports and PodReports count reports the node controller
	// acknowledged; Failed counts reports that failed (and are sent again).
	StatusReports, PodReports, Failed atomic.Int64
	// Resyncs counts resyncs the node controller asked for.
	Resyncs atomic.Int64
	// PodsStarted counts assigned pods the nodes started running,
	// PodsStopped those they stopped (Stopped, or unassigned), PodsEnded
	// those that ended on their own (Config.PodsEnd).
	PodsStarted, PodsStopped, PodsEnded atomic.Int64
	// PodReportsRefused counts pod statuses the node controller refused
	// because the pod is not bound to the node: dropped, not sent again.
	PodReportsRefused atomic.Int64
	// ForeignAssignments counts assignments a node's watch delivered that
	// name another node: none, since each node selects its own.
	ForeignAssignments atomic.Int64
	// Heartbeats times every heartbeat request the nodes' sessions sent,
	// from sending it to its answer's headers.
	Heartbeats Latency
}

// New builds the kubelet's node clients; they start handshaking at once.
// Call [Kubelet.Run] to start reporting and [Kubelet.Close] to end the
// sessions.
func New(cfg Config) (*Kubelet, error) {
	if cfg.API != "v1" && cfg.API != "v2" && cfg.API != "v2.1" {
		return nil, fmt.Errorf("kubelet: API %q: want v1, v2 or v2.1", cfg.API)
	}
	if cfg.Fork && cfg.API != "v2" {
		return nil, errors.New("kubelet: fork mode needs API v2")
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 1
	}
	if cfg.NodePrefix == "" {
		cfg.NodePrefix = "node-"
	}
	if cfg.ChangeEvery == 0 {
		cfg.ChangeEvery = 2 * time.Second
	}
	if cfg.CPUMillis <= 0 {
		cfg.CPUMillis = 4000
	}
	if cfg.CPUMillis <= SystemReservedCPUMillis {
		return nil, fmt.Errorf("kubelet: CPUMillis %d: want more than the %dm reserved", cfg.CPUMillis, SystemReservedCPUMillis)
	}
	if cfg.StartAfter <= 0 {
		cfg.StartAfter = 100 * time.Millisecond
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	k := &Kubelet{cfg: cfg, logger: cfg.Logger, heartbeats: framework.NewHeartbeats(cfg.Logger, nil),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sample_kubelet_reports_total",
			Help: "Reports sent to the node controller, by kind (status, pods) and outcome (ok, failed).",
		}, []string{"kind", "outcome"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sample_kubelet_resyncs_total",
			Help: "Full resyncs the node controller asked for.",
		}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(k.reports, k.resyncs)
	}
	base := cfg.Client
	if base.Transport == nil && cfg.NodeTLS == nil {
		base.Transport = framework.NewTransport(base.TLSConfig)
	}
	if base.Transport != nil {
		base.Transport = &timedTransport{next: base.Transport, beat: &k.stats.Heartbeats}
	}
	base.Heartbeats = k.heartbeats
	contract := nsv1.Contract
	switch cfg.API {
	case "v2":
		contract = nsv2.Contract
		if cfg.Fork {
			base.Fork = append(base.Fork, nsv2.ForkV1)
		}
	case "v2.1":
		contract = nsv21.Contract // speaks 2.0.0 too: no fork
	}
	suffix := randomHex(4)
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("%s%03d", cfg.NodePrefix, cfg.FirstNode+i)
		nd := newNode(k, name, int64(cfg.FirstNode+i))
		ncfg := base
		ncfg.Instance = name + "." + suffix
		ncfg.OnResync = nd.resync
		if cfg.NodeTLS != nil {
			tc, err := cfg.NodeTLS(name)
			if err != nil {
				k.Close()
				return nil, fmt.Errorf("kubelet: node %s: TLS: %w", name, err)
			}
			tr := nodeTransport(tc)
			if cfg.SourceAddr != nil {
				if ip := cfg.SourceAddr(i); ip != nil {
					tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
				}
			}
			k.transports = append(k.transports, tr)
			nd.own = &timedTransport{next: tr, beat: &k.stats.Heartbeats}
			ncfg.TLSConfig, ncfg.Transport = tc, nd.own
		}
		c, err := framework.NewClient(contract, ncfg)
		if err != nil {
			k.Close()
			return nil, fmt.Errorf("kubelet: node %s: %w", name, err)
		}
		nd.client = c
		k.nodes = append(k.nodes, nd)
	}
	return k, nil
}

// nodeTransport is one node's own transport: the framework's, with the
// buffers a real kubelet's client has (net/http's 4 KiB, not the 16 KiB
// read and 64 KiB write buffers the framework gives a process's shared
// transport, sized for multi-calls): a node's calls are
// small, and thousands of nodes hold two connections each (calls and
// heartbeats, its watch).
func nodeTransport(tc *tls.Config) *http.Transport {
	tr := framework.NewTransport(tc)
	tr.ReadBufferSize, tr.WriteBufferSize = 4<<10, 4<<10
	tr.MaxIdleConnsPerHost = 4
	return tr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run watches every node's pod assignments and reports every node's
// status and pods, then their changes, until ctx ends.
func (k *Kubelet) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, nd := range k.nodes {
		// A node's loops end with ctx, or when the node is killed.
		ctx, cancel := context.WithCancel(ctx)
		wg.Add(3)
		go func() {
			defer wg.Done()
			select {
			case <-nd.stopped:
			case <-ctx.Done():
			}
			cancel()
		}()
		go func() {
			defer wg.Done()
			nd.run(ctx)
		}()
		go func() {
			defer wg.Done()
			if err := nd.watch(ctx); err != nil {
				k.logger.Error("watching pod assignments", "node", nd.name, "err", err)
			}
		}()
	}
	wg.Wait()
}

// Synced reports whether every node's watch of its pod assignments has
// had its first snapshot.
func (k *Kubelet) Synced() bool {
	for _, nd := range k.nodes {
		if !nd.synced.Load() {
			return false
		}
	}
	return true
}

// Running returns the UIDs of the pods node i runs (Pending or Running),
// in the order they were assigned.
func (k *Kubelet) Running(i int) []string { return k.nodes[i].running() }

// Close ends every node's session, so the node controller learns at once
// that the nodes' kubelet is gone (a restart then costs only the time until
// the new process reports).
func (k *Kubelet) Close() {
	var wg sync.WaitGroup
	limit := make(chan struct{}, 64)
	for _, nd := range k.nodes {
		if nd.client == nil {
			continue
		}
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-limit }()
			_ = nd.client.Close()
		}()
	}
	wg.Wait()
	for _, tr := range k.transports {
		tr.CloseIdleConnections()
	}
}

// Stop kills node i as a machine that dies does: its loops stop and, when
// the node has a transport of its own (Config.NodeTLS), it sends nothing
// more, not even the goodbye that ends its session, so the node controller
// learns of it only when the session lapses, its TTL after the last
// heartbeat. Nodes that share a transport share their heartbeat requests
// too, so one of them cannot fall silent alone: Stop then ends its session
// with a goodbye, as a kubelet that stops cleanly does. The other nodes go
// on.
func (k *Kubelet) Stop(i int) {
	nd := k.nodes[i]
	nd.stopOnce.Do(func() {
		if nd.own != nil {
			nd.own.dead.Store(true)
			nd.own.CloseIdleConnections()
		}
		close(nd.stopped)
		_ = nd.client.Close()
	})
}

// Nodes returns how many nodes the kubelet simulates.
func (k *Kubelet) Nodes() int { return len(k.nodes) }

// Client returns node i's lockstep client.
func (k *Kubelet) Client(i int) *framework.Client { return k.nodes[i].client }

// Stats returns the kubelet's counters.
func (k *Kubelet) Stats() *Stats { return &k.stats }

// Ready returns nil when every node holds a session with a compatible node
// controller, else why not.
func (k *Kubelet) Ready() error {
	var first error
	blocked := 0
	for _, nd := range k.nodes {
		if err := nd.client.Ready(); err != nil {
			blocked++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return fmt.Errorf("%d of %d nodes have no compatible node controller: %w", blocked, len(k.nodes), first)
	}
	return nil
}

// Status describes the kubelet for its /status page.
func (k *Kubelet) Status() any {
	ready := 0
	for _, nd := range k.nodes {
		if nd.client.Ready() == nil {
			ready++
		}
	}
	return map[string]any{
		"api": k.cfg.API, "fork": k.cfg.Fork, "nodes": len(k.nodes), "nodesWithSession": ready,
		"statusReports": k.stats.StatusReports.Load(), "podReports": k.stats.PodReports.Load(),
		"failedReports": k.stats.Failed.Load(), "resyncs": k.stats.Resyncs.Load(),
		"podsStarted": k.stats.PodsStarted.Load(), "podsStopped": k.stats.PodsStopped.Load(), "podsEnded": k.stats.PodsEnded.Load(),
		"podReportsRefused": k.stats.PodReportsRefused.Load(),
		"heartbeats":        k.stats.Heartbeats.Count(), "heartbeatP99Seconds": k.stats.Heartbeats.Quantile(0.99).Seconds(),
		"endpoints": k.nodes[0].client.Endpoints(),
	}
}

// ReportStatus sends node i's whole status once: exactly one call.
func (k *Kubelet) ReportStatus(ctx context.Context, i int) error {
	nd := k.nodes[i]
	nd.mu.Lock()
	st := nd.statusLocked()
	nd.mu.Unlock()
	return nd.sendStatus(ctx, st)
}
