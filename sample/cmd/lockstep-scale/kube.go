package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

// podNamespace holds the pods of the Kubernetes path.
const podNamespace = "scale"

// measureKube runs the Kubernetes path: hollow kubelets that renew Leases
// and patch NodeStatus through the API server, pods created and bound
// through it, and kube-controller-manager's node lifecycle controller
// noticing the killed nodes.
func measureKube(ctx context.Context, c config) (*Result, error) {
	res := &Result{Path: "kubernetes", Nodes: c.nodes, PodsPerNode: c.podsPerNode, LoadStart: loadAvg(), SourceAddrs: c.sourceAddrs, HollowGOGC: c.hollowGOGC,
		LeaseEverySeconds: c.leaseEvery.Seconds()}
	obs, err := newObserver(c.watch, c.etcdMetrics, c.adminKubeconfig)
	if err != nil {
		return nil, err
	}
	if obs.admin == nil || c.clientCA == "" || c.clientCAKey == "" {
		return nil, errors.New("--path kubernetes needs --admin-kubeconfig, --client-ca-cert and --client-ca-key")
	}
	server := obs.host
	if err := loopbackURL(server); err != nil {
		return nil, err
	}
	block := func(b int) int {
		if c.sourceAddrs {
			return b
		}
		return 0
	}
	args := func(nodes int, prefix string, b int) []string {
		return []string{"kube-hollow", "-server", server, "-ca-cert", c.clientCA, "-ca-key", c.clientCAKey,
			"-nodes", strconv.Itoa(nodes), "-prefix", prefix, "-lease-every", c.leaseEvery.String(),
			"-node-status-every", c.nodeStatusEvery.String(), "-source-block", strconv.Itoa(block(b))}
	}
	start := time.Now()
	var children []*child
	defer func() {
		for _, ch := range children {
			ch.stop()
		}
	}()
	mainArgs := args(c.nodes, "node-", 11)
	if c.hollowGOGC != 0 {
		mainArgs = append(mainArgs, "-gogc", strconv.Itoa(c.hollowGOGC))
	}
	main, err := startProcess(mainArgs...)
	if err != nil {
		return nil, err
	}
	children = append(children, main)
	var victims []*child
	for i := range c.kills {
		v, err := startProcess(args(1, fmt.Sprintf("victim-%d-", i), 110+i)...)
		if err != nil {
			return nil, err
		}
		children, victims = append(children, v), append(victims, v)
	}
	total := c.nodes + c.kills
	lastSaid := time.Now()
	ready := 0
	if err := waitFor(ctx, c.registerFor, time.Second, func() bool {
		ready, _ = obs.readyNodeObjects(ctx)
		if time.Since(lastSaid) >= 10*time.Second {
			fmt.Fprintf(os.Stderr, "kubernetes: %d of %d Node objects Ready after %.0f s\n", ready, total, time.Since(start).Seconds())
			lastSaid = time.Now()
		}
		return ready == total
	}); err != nil {
		return nil, fmt.Errorf("%d of %d nodes registered: %w", ready, total, err)
	}
	res.RegisterSeconds = time.Since(start).Seconds()
	fmt.Fprintf(os.Stderr, "kubernetes: %d nodes registered in %.1f s\n", total, res.RegisterSeconds)

	// Kills: SIGKILL to every victim at once, as the steady window starts
	// or once the nodes are registered; each is noticed when the node
	// lifecycle controller marks its Ready condition Unknown (its writes
	// are a few per node). kill returns what waits for them.
	kill := func() (wait func() error) {
		var mu sync.Mutex // guards res's kill figures
		return killVictims(victims, func(name string, killed time.Time) error {
			at, err := obs.nodeNotReady(ctx, name, 3*time.Minute)
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
	// (mostly the removal of the not-ready taint the API server put on
	// each) go on while the pods are placed.
	settled := obs.settling(ctx, 10*time.Minute)
	defer settled()

	// Pods: created, then bound as a scheduler binds them; Running when
	// their kubelet wrote so through the API server.
	if err := namespace(ctx, obs); err != nil {
		return nil, err
	}
	tracker, stopTracker := trackRunning(obs)
	defer stopTracker()
	start = time.Now()
	before := obs.snapshot(ctx)
	bound := placeKube(ctx, obs, c)
	res.PodsPlaced = len(bound)
	res.BindsPerSec = round(float64(res.PodsPlaced)/time.Since(start).Seconds(), 1)
	if res.PodsNotRunning, err = waitRunning(ctx, res.PodsPlaced, tracker.running); err != nil {
		return nil, err
	}
	res.PlaceSeconds = time.Since(start).Seconds()
	res.PlacementPodWritesPerSec = podWritesPerSec(obs.between(before, obs.snapshot(ctx)).WritesPerSec)
	fmt.Fprintf(os.Stderr, "kubernetes: %d pods placed and %d Running in %.1f s\n", res.PodsPlaced, res.PodsPlaced-res.PodsNotRunning, res.PlaceSeconds)
	var d []time.Duration
	for name, at := range bound {
		if r, ok := tracker.at(name); ok {
			d = append(d, max(0, r.Sub(at)))
		}
	}
	p50, p99 := quantiles(d)
	res.BindToRunningP50Ms, res.BindToRunningP99Ms = ms(p50), ms(p99)

	// The steady state: Lease renewals, NodeStatus reads and patches, once
	// kube-controller-manager is done with the new Node objects.
	fmt.Fprintf(os.Stderr, "kubernetes: Node objects settled %.0f s after the nodes registered\n", settled().Seconds())
	obs.procs["hollow-nodes"] = []int{main.cmd.Process.Pid}
	main.steady()
	if !c.killAtRegistration {
		killed = kill()
	}
	err = steady(ctx, obs, c.steady, res)
	main.endSteady()
	if err == nil {
		res.HollowKiBPerNode = round(res.RSSMiB["hollow-nodes"]*1024/float64(c.nodes), 1)
		res.LostLiveNodes, err = obs.countNodeObjects(ctx, "node-", corev1.ConditionUnknown)
	}
	if kerr := killed(); err == nil {
		err = kerr
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(res.KillNoticedMs)
	res.KillNoticedP99Ms = p99ms(res.KillNoticedMs)

	keepBeats(res, mergeStats([]childStats{main.stop()}), 1)
	res.LoadEnd, res.LoadMax = loadAvg(), loadMax()
	return res, nil
}

// namespace creates the pods' namespace and its default ServiceAccount.
func namespace(ctx context.Context, obs *observer) error {
	_, err := obs.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = obs.admin.CoreV1().ServiceAccounts(podNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// placeKube creates podsPerNode pods for each node and binds each to its
// node, with bindConcurrency in flight, until done or placeFor passed; it
// returns when each pod's binding was acknowledged.
func placeKube(ctx context.Context, obs *observer, c config) map[string]time.Time {
	ctx, cancel := context.WithTimeout(ctx, c.placeFor)
	defer cancel()
	var next atomic.Int64
	total := int64(c.nodes * c.podsPerNode)
	var mu sync.Mutex
	bound := map[string]time.Time{}
	pods := obs.admin.CoreV1().Pods(podNamespace)
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
				node := fmt.Sprintf("node-%03d", i%int64(c.nodes))
				name := fmt.Sprintf("pod-%d", i)
				zero := int64(0)
				_, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.PodSpec{SchedulerName: "lockstep-scale", TerminationGracePeriodSeconds: &zero,
						Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}}}}},
					metav1.CreateOptions{})
				if err != nil {
					continue
				}
				err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
				if err == nil {
					mu.Lock()
					bound[name] = time.Now()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return bound
}

// runningTracker records when each pod of the namespace was first seen
// Running, through an informer of the administrator's.
type runningTracker struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func (r *runningTracker) saw(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Status.Phase != corev1.PodRunning {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.times[p.Name]; !seen {
		r.times[p.Name] = time.Now()
	}
}

func (r *runningTracker) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.times)
}

func (r *runningTracker) at(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.times[name]
	return t, ok
}

func trackRunning(obs *observer) (*runningTracker, func()) {
	r := &runningTracker{times: map[string]time.Time{}}
	lw := cache.NewListWatchFromClient(obs.admin.CoreV1().RESTClient(), "pods", podNamespace, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: r.saw, UpdateFunc: func(_, o any) { r.saw(o) }})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(stop) }()
	cache.WaitForCacheSync(stop, inf.HasSynced)
	return r, func() { close(stop); <-done }
}

// kubeHollow is the Kubernetes path's hollow kubelets' process: each node,
// with a client certificate of its own (system:node:<name>, in
// system:nodes, as the Node authoriser expects), registers its Node object
// and Lease, renews the Lease every -lease-every, reads its Node every 10 s
// and patches its status when -node-status-every passed since it last did
// (its first patch at a random point of the first period, as the nodes of
// a running cluster are spread), watches the pods bound to it and writes
// each one's status Running. It runs until its stdin closes (a steadyLine
// on it marks the steady window's start), then prints its figures as one
// JSON line.
func kubeHollow(args []string) int {
	fs := flag.NewFlagSet("kube-hollow", flag.ExitOnError)
	server := fs.String("server", "", "the API server's URL")
	caCert := fs.String("ca-cert", "", "the API server's CA certificate (it signs the API server's and its clients' certificates)")
	caKey := fs.String("ca-key", "", "that CA's key, to issue each node its client certificate")
	nodes := fs.Int("nodes", 1, "nodes")
	prefix := fs.String("prefix", "node-", "node name prefix")
	leaseEvery := fs.Duration("lease-every", 10*time.Second, "Lease renewal period")
	statusEvery := fs.Duration("node-status-every", 5*time.Minute, "NodeStatus report period when nothing changed")
	block := fs.Int("source-block", 0, "if not 0, node i dials from 127.<block>.x.y")
	gogc := fs.Int("gogc", 0, "if not 0, the process's GOGC (its garbage collector's target heap growth, in percent)")
	_ = fs.Parse(args)
	if *gogc != 0 {
		debug.SetGCPercent(*gogc)
	}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "kube-hollow:", err); return 1 }
	if err := loopbackURL(*server); err != nil {
		return fail(err)
	}
	ca, err := loadCA(*caCert, *caKey)
	if err != nil {
		return fail(err)
	}
	h := &kubeNodes{stats: &kubeStats{}, leaseEvery: *leaseEvery, statusEvery: *statusEvery}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Nodes register 32 at a time, as a cluster's machines boot spread
	// out, not in one instant.
	sem := make(chan struct{}, 32)
	var transports []*http.Transport
	var tmu sync.Mutex
	for i := range *nodes {
		name := fmt.Sprintf("%s%03d", *prefix, i)
		cert, key, err := ca.issue(name)
		if err != nil {
			cancel()
			return fail(err)
		}
		cfg := &rest.Config{Host: *server, QPS: 50, Burst: 100, UserAgent: "lockstep-scale-kubelet/" + name,
			TLSClientConfig: rest.TLSClientConfig{CAData: ca.certPEM, CertData: cert, KeyData: key}}
		if *block != 0 {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: sourceAddr(*block, i)}, Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
			cfg.Dial = d.DialContext
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			cancel()
			return fail(err)
		}
		if tr, ok := hc.Transport.(*http.Transport); ok {
			tmu.Lock()
			transports = append(transports, tr)
			tmu.Unlock()
		}
		core, err := corev1client.NewForConfigAndClient(cfg, hc)
		if err != nil {
			cancel()
			return fail(err)
		}
		coord, err := coordinationv1client.NewForConfigAndClient(cfg, hc)
		if err != nil {
			cancel()
			return fail(err)
		}
		n := &kubeNode{h: h, name: name, core: core, leases: coord.Leases(corev1.NamespaceNodeLease),
			rand: mathrand.New(mathrand.NewPCG(uint64(i), 11))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			// A kubelet tries to register until it can.
			for {
				err := n.register(ctx)
				if err == nil {
					break
				}
				h.stats.failed.Add(1)
				fmt.Fprintf(os.Stderr, "kube-hollow: %s: register (tried again): %v\n", name, err)
				n.retryPause(ctx)
				if ctx.Err() != nil {
					<-sem
					return
				}
			}
			<-sem
			n.run(ctx)
		}()
	}
	var window steadyWindow
	awaitParent(func() { window.start = h.stats.leases.Snapshot() }, func() { window.end = h.stats.leases.Snapshot() })
	cs := childStats{Nodes: *nodes, StatusReports: h.stats.statuses.Load(), PodReports: h.stats.pods.Load(), Failed: h.stats.failed.Load()}
	cs.beats(&h.stats.leases, &window)
	b, _ := json.Marshal(cs)
	fmt.Println(string(b))
	cancel()
	wg.Wait()
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	return 0
}

// kubeNodes is what the process's hollow kubelets share.
type kubeNodes struct {
	stats                   *kubeStats
	leaseEvery, statusEvery time.Duration
}

// kubeStats counts what the hollow kubelets did: Lease renewals (timed),
// NodeStatus patches, pod status writes and failed calls.
type kubeStats struct {
	leases                 kubelet.Latency
	statuses, pods, failed atomic.Int64
}

// kubeNode is one hollow kubelet of the Kubernetes path.
type kubeNode struct {
	h      *kubeNodes
	name   string
	core   corev1client.CoreV1Interface
	leases coordinationv1client.LeaseInterface
	rand   *mathrand.Rand
	lease  *coordinationv1.Lease
}

// register creates the node's Node object, Ready, with its capacity, and
// its Lease.
func (n *kubeNode) register(ctx context.Context) error {
	now := metav1.Now()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
		corev1.LabelHostname: n.name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		// The kubelet sets the beta labels too; without them the node
		// lifecycle controller adds them, one more write per node.
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: n.conditions(now),
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: n.name}}}}
	if _, err := n.core.Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	n.h.stats.statuses.Add(1)
	dur := int32(40)
	holder := n.name
	l, err := n.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &metav1.MicroTime{Time: now.Time}}},
		metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		l, err = n.leases.Get(ctx, n.name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	n.lease = l
	return nil
}

func (n *kubeNode) conditions(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID")}
}

// run renews the Lease, reads and reports the NodeStatus, and runs the
// node's pods until ctx ends.
func (n *kubeNode) run(ctx context.Context) {
	go n.pods(ctx)
	// The first renewal and status check at a random point of their
	// period; the first status patch at a random point of its own.
	leaseT := time.NewTimer(time.Duration(n.rand.Int64N(int64(n.h.leaseEvery))))
	const check = 10 * time.Second
	statusT := time.NewTimer(time.Duration(n.rand.Int64N(int64(check))))
	defer leaseT.Stop()
	defer statusT.Stop()
	reportAt := time.Now().Add(time.Duration(n.rand.Int64N(int64(n.h.statusEvery))))
	for {
		select {
		case <-ctx.Done():
			return
		case <-leaseT.C:
			n.renew(ctx)
			leaseT.Reset(n.h.leaseEvery)
		case <-statusT.C:
			if n.reportStatus(ctx, time.Now().After(reportAt)) {
				reportAt = time.Now().Add(n.h.statusEvery)
			}
			statusT.Reset(check)
		}
	}
}

// renew updates the Lease's renewTime, as the kubelet's lease controller
// does: an update of the copy it holds, and on a conflict a read and one
// more update.
func (n *kubeNode) renew(ctx context.Context) {
	for attempt := 0; attempt < 2; attempt++ {
		l := n.lease.DeepCopy()
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		start := time.Now()
		out, err := n.leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			n.h.stats.leases.Record(time.Since(start))
			n.lease = out
			return
		}
		if ctx.Err() != nil {
			return
		}
		n.h.stats.failed.Add(1)
		if !apierrors.IsConflict(err) {
			return
		}
		if got, err := n.leases.Get(ctx, n.name, metav1.GetOptions{}); err == nil {
			n.lease = got
		}
	}
}

// reportStatus reads the node (from the API server's cache, as the
// kubelet does every 10 s) and patches its conditions when due (the
// report period passed) or when the object's differ from the node's own
// (a node lifecycle controller marked it Unknown while its Lease was
// late), as the kubelet patches a status that changed; it reports whether
// the patch was made.
func (n *kubeNode) reportStatus(ctx context.Context, due bool) bool {
	node, err := n.core.Nodes().Get(ctx, n.name, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		n.h.stats.failed.Add(1)
		return false
	}
	if !due && readyOf(node) == corev1.ConditionTrue {
		return false
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": n.conditions(metav1.Now())}})
	if _, err := n.core.Nodes().PatchStatus(ctx, n.name, patch); err != nil {
		n.h.stats.failed.Add(1)
		return false
	}
	n.h.stats.statuses.Add(1)
	return true
}

// pods watches the pods bound to the node and writes each new one's
// status Running after 100 ms (its containers started), as the kubelet's
// status manager does.
func (n *kubeNode) pods(ctx context.Context) {
	sel := fields.OneTermEqualSelector("spec.nodeName", n.name).String()
	started := map[types.UID]bool{}
	for ctx.Err() == nil {
		l, err := n.core.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: "0"})
		if err != nil {
			n.retryPause(ctx)
			continue
		}
		for i := range l.Items {
			n.start(ctx, &l.Items[i], started)
		}
		w, err := n.core.Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: l.ResourceVersion,
			AllowWatchBookmarks: true})
		if err != nil {
			n.retryPause(ctx)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				if p, ok := ev.Object.(*corev1.Pod); ok {
					n.start(ctx, p, started)
				}
			}
		}
		w.Stop()
	}
}

func (n *kubeNode) retryPause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Second + time.Duration(n.rand.Int64N(int64(time.Second)))):
	}
}

func (n *kubeNode) start(ctx context.Context, p *corev1.Pod, started map[types.UID]bool) {
	if started[p.UID] || p.Status.Phase == corev1.PodRunning {
		return
	}
	started[p.UID] = true
	ns, name := p.Namespace, p.Name
	time.AfterFunc(100*time.Millisecond, func() {
		now := metav1.Now()
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": corev1.PodRunning, "startTime": now,
			"conditions": []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}})
		if _, err := n.core.Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			n.h.stats.failed.Add(1)
			return
		}
		n.h.stats.pods.Add(1)
	})
}

// clientCA issues the hollow kubelets' client certificates.
type clientCA struct {
	cert    *x509.Certificate
	key     any
	certPEM []byte
	serial  atomic.Int64
}

func loadCA(certFile, keyFile string) (*clientCA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("the CA's certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	var key any
	if key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
		if key, err = x509.ParsePKCS8PrivateKey(kb.Bytes); err != nil {
			return nil, fmt.Errorf("the CA's key: %w", err)
		}
	}
	ca := &clientCA{cert: cert, key: key, certPEM: certPEM}
	ca.serial.Store(time.Now().UnixNano())
	return ca, nil
}

// issue signs a client certificate for node: user system:node:<node>, in
// the group system:nodes.
func (ca *clientCA) issue(node string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)),
		Subject:   pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
