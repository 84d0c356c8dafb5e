package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// observer reads what a run measures outside its own process: the CPU and
// memory of the control plane's processes (--watch) from /proc, etcd's
// count of durable writes from its own /metrics (--etcd-metrics), and the
// API server's requests by resource from its /metrics (--admin-kubeconfig).
type observer struct {
	procs   map[string][]int // name -> pids, whose CPU and RSS are summed
	etcd    string           // etcd's metrics URL
	admin   kubernetes.Interface
	host    string // the API server's URL
	httpCli *http.Client
}

func newObserver(watch, etcdMetrics, adminKubeconfig string) (*observer, error) {
	o := &observer{procs: map[string][]int{}, etcd: etcdMetrics, httpCli: &http.Client{Timeout: 10 * time.Second}}
	for _, kv := range strings.Split(watch, ",") {
		if kv == "" {
			continue
		}
		name, pid, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			return nil, fmt.Errorf("--watch: %q is not name=pid", kv)
		}
		o.procs[name] = []int{n}
	}
	if etcdMetrics != "" {
		if err := loopbackURL(etcdMetrics); err != nil {
			return nil, fmt.Errorf("--etcd-metrics: %w", err)
		}
	}
	if adminKubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--admin-kubeconfig: %w", err)
		}
		rc.QPS, rc.Burst = 1000, 2000
		o.host = rc.Host
		if o.admin, err = kubernetes.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("--admin-kubeconfig: %w", err)
		}
	}
	return o, nil
}

// loopbackURL refuses a URL whose host is not a loopback address: every
// byte of a run stays on the machine.
func loopbackURL(raw string) error {
	host := strings.TrimPrefix(strings.TrimPrefix(raw, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not on a loopback address", raw)
	}
	return nil
}

// snapshot is what the observer read at one moment.
type snapshot struct {
	at time.Time
	// etcdPuts is etcd_mvcc_put_total: every key etcd wrote, each a
	// durable write.
	etcdPuts float64
	// writes are the API server's apiserver_request_total of writing verbs
	// (POST, PUT, PATCH, DELETE, APPLY), by "resource[/subresource] VERB".
	writes map[string]float64
	cpu    map[string]time.Duration
	// apiserverRead is set when the API server's metrics were read.
	apiserverRead bool
}

func (o *observer) snapshot(ctx context.Context) snapshot {
	s := snapshot{at: time.Now(), writes: map[string]float64{}, cpu: map[string]time.Duration{}}
	for name, pids := range o.procs {
		for _, pid := range pids {
			s.cpu[name] += cpuOf(pid)
		}
	}
	if o.etcd != "" {
		if resp, err := o.httpCli.Get(o.etcd); err == nil {
			for _, m := range parseMetrics(resp.Body, "etcd_mvcc_put_total") {
				s.etcdPuts += m.value
			}
			resp.Body.Close()
		}
	}
	if o.admin != nil {
		body, err := o.admin.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err == nil {
			s.apiserverRead = true
			for _, m := range parseMetrics(strings.NewReader(string(body)), "apiserver_request_total") {
				switch m.labels["verb"] {
				case "POST", "PUT", "PATCH", "DELETE", "APPLY":
				default:
					continue
				}
				key := m.labels["resource"]
				if sub := m.labels["subresource"]; sub != "" {
					key += "/" + sub
				}
				s.writes[key+" "+m.labels["verb"]] += m.value
			}
		}
	}
	return s
}

// usage is what a window between two snapshots measured.
type usage struct {
	EtcdPutsPerSec float64            `json:"etcdPutsPerSecond"`
	WritesPerSec   map[string]float64 `json:"apiserverWritesPerSecond"`
	Cores          map[string]float64 `json:"cores"`
}

func (o *observer) between(a, b snapshot) usage {
	secs := b.at.Sub(a.at).Seconds()
	u := usage{EtcdPutsPerSec: (b.etcdPuts - a.etcdPuts) / secs, WritesPerSec: map[string]float64{}, Cores: map[string]float64{}}
	for k, v := range b.writes {
		if d := v - a.writes[k]; d > 0 {
			u.WritesPerSec[k] = round(d/secs, 3)
		}
	}
	for name := range o.procs {
		u.Cores[name] = round((b.cpu[name]-a.cpu[name]).Seconds()/secs, 4)
	}
	return u
}

// memory is each watched process's RSS and peak RSS, in MiB; a name of
// several processes (the hollow nodes') sums theirs, peaks included.
func (o *observer) memory() (rss, peak map[string]float64) {
	rss, peak = map[string]float64{}, map[string]float64{}
	for name, pids := range o.procs {
		var r, p uint64
		for _, pid := range pids {
			ri, pi := memOf(pid)
			r, p = r+ri, p+pi
		}
		rss[name], peak[name] = round(mib(r), 1), round(mib(p), 1)
	}
	return rss, peak
}

// nodeWritesPerSec sums the writes of node liveness and status: Leases
// (Kubernetes' heartbeats) and Node objects, their status included.
func nodeWritesPerSec(w map[string]float64) float64 {
	var n float64
	for k, v := range w {
		res, _, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		if res == "nodes" || res == "leases" {
			n += v
		}
	}
	return round(n, 3)
}

// podWritesPerSec sums the writes of pods (creates, bindings, status).
func podWritesPerSec(w map[string]float64) float64 {
	var n float64
	for k, v := range w {
		res, _, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		if res == "pods" {
			n += v
		}
	}
	return round(n, 3)
}

// nodeNotReady polls the API server until node's Ready condition is not
// True (Unknown, once a node controller noticed it is silent), and returns
// when it saw that.
func (o *observer) nodeNotReady(ctx context.Context, node string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n, err := o.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil && readyOf(n) != corev1.ConditionTrue {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("node %s still Ready in the API server after %v (last error %v)", node, timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settle waits until nothing but node liveness and status changes Node
// objects: until no Node object but the victims' (named by a prefix
// "victim-") had its labels, annotations or spec (taints) changed for 6 s,
// at most timeout, as a watch of the Node objects shows. Those are
// kube-controller-manager's one-time writes of each new node (its
// labels' reconciliation, say, at its own client's pace); the victims',
// when killed as the nodes registered, are their node lifecycle's, which
// the steady window holds anyway. It returns how long that took.
// (Most of those writes are the node lifecycle controller's removal of
// the not-ready taint the API server's admission put on every new Node,
// at kube-controller-manager's 20 writes per second.)
func (o *observer) settle(ctx context.Context, timeout time.Duration) time.Duration {
	const quiet = 6 * time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	seen := map[string]string{}
	lastChange := time.Now()
	rv := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil && time.Since(lastChange) < quiet {
		w, err := o.admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			rv = "" // too old, say: from the start again, which is no change
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			continue
		}
	events:
		for time.Since(lastChange) < quiet {
			select {
			case <-ctx.Done():
				break events
			case <-tick.C:
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				n, isNode := ev.Object.(*corev1.Node)
				if !isNode {
					rv = "" // an error (the version too old): watch again from now, comparing with what was seen
					continue
				}
				rv = n.ResourceVersion
				if ev.Type == "BOOKMARK" || strings.HasPrefix(n.Name, "victim-") {
					continue
				}
				key := nodeShape(n)
				if old, known := seen[n.Name]; known && old != key {
					lastChange = time.Now()
				}
				seen[n.Name] = key
			}
		}
		w.Stop()
	}
	return time.Since(start)
}

// settling starts settle at once and returns what waits for its end and
// says how long it took: the Node objects settle while the pods are
// placed.
func (o *observer) settling(ctx context.Context, timeout time.Duration) (wait func() time.Duration) {
	done := make(chan time.Duration, 1)
	go func() { done <- o.settle(ctx, timeout) }()
	var took time.Duration
	var once sync.Once
	return func() time.Duration {
		once.Do(func() { took = <-done })
		return took
	}
}

// nodeShape is what of a Node object is not its status: its labels,
// annotations and spec.
func nodeShape(n *corev1.Node) string {
	b, _ := json.Marshal(struct {
		Labels, Annotations map[string]string
		Spec                corev1.NodeSpec
	}{n.Labels, n.Annotations, n.Spec})
	return string(b)
}

// readyNodeObjects counts the Node objects whose Ready condition is True.
func (o *observer) readyNodeObjects(ctx context.Context) (int, error) {
	return o.countNodeObjects(ctx, "", corev1.ConditionTrue)
}

// countNodeObjects counts the Node objects whose name starts with prefix
// and whose Ready condition is (if is is True) or is not (else) True.
func (o *observer) countNodeObjects(ctx context.Context, prefix string, is corev1.ConditionStatus) (int, error) {
	l, err := o.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range l.Items {
		if strings.HasPrefix(l.Items[i].Name, prefix) && (readyOf(&l.Items[i]) == corev1.ConditionTrue) == (is == corev1.ConditionTrue) {
			n++
		}
	}
	return n, nil
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// metric is one sample of a Prometheus text exposition.
type metric struct {
	labels map[string]string
	value  float64
}

// parseMetrics returns the samples of the metric named name in a
// Prometheus text exposition (label values without commas or escaped
// quotes, as the ones read here are).
func parseMetrics(r io.Reader, name string) []metric {
	var out []metric
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		m := metric{labels: map[string]string{}}
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				continue
			}
			for _, kv := range strings.Split(rest[1:end], ",") {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					m.labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // a longer name that starts with name
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m.value = v
		out = append(out, m)
	}
	return out
}

// quantiles returns the p50 and p99 of d (sorted in place).
func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	q := func(f float64) time.Duration { return d[min(len(d)-1, int(f*float64(len(d))))] }
	return q(0.5), q(0.99)
}

func p99ms(ms []int64) int64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	return s[min(len(s)-1, int(0.99*float64(len(s))))]
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// sourceAddr is the loopback address of the i-th node of a process whose
// nodes dial from block: 127.block.x.y, with y never 0 or 255.
func sourceAddr(block, i int) net.IP {
	return net.IPv4(127, byte(block), byte(i/254), byte(1+i%254))
}
