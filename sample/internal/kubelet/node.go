package kubelet

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"runtime"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/framework"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
)

// simNode is one simulated node: its status and pods, what changed since
// it last reported, and its session.
type simNode struct {
	k      *Kubelet
	name   string
	client *framework.Client
	rand   *mathrand.Rand

	mu           sync.Mutex
	diskPressure bool
	pods         []*nsv2.PodStatus
	podSeq       int
	statusDirty  bool
	podsDirty    map[string]*nsv2.PodStatus
	wake         chan struct{}
}

func newNode(k *Kubelet, name string, seed int64) *simNode {
	nd := &simNode{k: k, name: name, rand: mathrand.New(mathrand.NewPCG(uint64(seed), 7)),
		statusDirty: true, podsDirty: map[string]*nsv2.PodStatus{}, wake: make(chan struct{}, 1)}
	for i := 0; i < k.cfg.PodsPerNode; i++ {
		nd.addPodLocked(nsv2.PodStatusPhaseRunning)
	}
	return nd
}

func (nd *simNode) addPodLocked(phase nsv2.PodStatusPhase) {
	nd.podSeq++
	ready := phase == nsv2.PodStatusPhaseRunning
	restarts := int64(0)
	p := &nsv2.PodStatus{NodeName: nd.name, Namespace: "default", Name: fmt.Sprintf("%s-pod-%d", nd.name, nd.podSeq),
		UID: fmt.Sprintf("%s-%d", nd.name, nd.podSeq), Phase: phase, Ready: &ready, RestartCount: &restarts}
	nd.pods = append(nd.pods, p)
	nd.podsDirty[p.UID] = p
}

// statusLocked is the node's whole status now.
func (nd *simNode) statusLocked() *nsv2.NodeStatus {
	version := nd.k.cfg.Client.Release
	disk := nsv2.Condition{Status: nsv2.ConditionStatusFalse}
	if nd.diskPressure {
		disk.Status = nsv2.ConditionStatusTrue
	}
	reason := "KubeletReady"
	labels := map[string]string{}
	for k, v := range nd.k.cfg.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname], labels[corev1.LabelOSStable], labels[corev1.LabelArchStable] = nd.name, "linux", runtime.GOARCH
	var taints []nsv2.Taint
	for _, t := range nd.k.cfg.Taints {
		tt := nsv2.Taint{Key: t.Key, Effect: nsv2.TaintEffect(t.Effect)}
		if t.Value != "" {
			tt.Value = &t.Value
		}
		taints = append(taints, tt)
	}
	return &nsv2.NodeStatus{
		Labels: labels, Taints: taints,
		// A simulated node runs on the kubelet's own loopback.
		Addresses: []nsv2.NodeAddress{{Type: nsv2.NodeAddressTypeHostname, Address: nd.name}, {Type: nsv2.NodeAddressTypeInternalIP, Address: "127.0.0.1"}},
		NodeName:  nd.name, KubeletVersion: &version,
		Conditions: nsv2.Conditions{
			Ready:        nsv2.Condition{Status: nsv2.ConditionStatusTrue, Reason: &reason},
			DiskPressure: &disk,
		},
		Capacity:    nsv2.Resources{CPUMillis: 4000, MemoryBytes: 16 << 30, Pods: 110},
		Allocatable: nsv2.Resources{CPUMillis: 3800, MemoryBytes: 15 << 30, Pods: 110},
	}
}

// resync marks everything to be sent again; the node controller asked.
func (nd *simNode) resync() {
	nd.k.stats.Resyncs.Add(1)
	nd.k.resyncs.Inc()
	nd.mu.Lock()
	nd.statusDirty = true
	for _, p := range nd.pods {
		nd.podsDirty[p.UID] = p
	}
	nd.mu.Unlock()
	nd.poke()
}

func (nd *simNode) poke() {
	select {
	case nd.wake <- struct{}{}:
	default:
	}
}

// change simulates one event on the node.
func (nd *simNode) change() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.rand.IntN(5) == 0 {
		nd.diskPressure = !nd.diskPressure
		nd.statusDirty = true
		return
	}
	i := nd.rand.IntN(len(nd.pods))
	p := nd.pods[i]
	switch {
	case p.Phase == nsv2.PodStatusPhasePending:
		p.Phase, *p.Ready = nsv2.PodStatusPhaseRunning, true
	case nd.rand.IntN(2) == 0:
		*p.RestartCount++
	default:
		p.Phase, *p.Ready = nsv2.PodStatusPhaseSucceeded, false
		nd.pods = append(nd.pods[:i], nd.pods[i+1:]...)
		nd.addPodLocked(nsv2.PodStatusPhasePending)
	}
	nd.podsDirty[p.UID] = p
}

// run sends what changed, then waits for the next change, a resync or the
// end. A report that fails stays pending and is sent again.
func (nd *simNode) run(ctx context.Context) {
	var next <-chan time.Time
	schedule := func() {
		if nd.k.cfg.ChangeEvery > 0 {
			d := time.Duration(float64(nd.k.cfg.ChangeEvery) * (0.5 + nd.rand.Float64()))
			next = time.After(d)
		}
	}
	schedule()
	retry := time.Duration(0)
	for ctx.Err() == nil {
		if err := nd.sendPending(ctx); err != nil && ctx.Err() == nil {
			nd.k.logger.Debug("report failed; sending it again", "node", nd.name, "err", err)
			retry = min(max(2*retry, 50*time.Millisecond), 2*time.Second)
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
			continue
		}
		retry = 0
		select {
		case <-ctx.Done():
		case <-nd.wake:
		case <-next:
			nd.change()
			schedule()
		}
	}
}

// sendPending sends the status if it changed, then the pods that did.
func (nd *simNode) sendPending(ctx context.Context) error {
	nd.mu.Lock()
	var st *nsv2.NodeStatus
	if nd.statusDirty {
		st, nd.statusDirty = nd.statusLocked(), false
	}
	var pods []*nsv2.PodStatus
	for _, p := range nd.podsDirty {
		cp := *p
		pods = append(pods, &cp)
	}
	clear(nd.podsDirty)
	nd.mu.Unlock()
	if st != nil {
		if err := nd.sendStatus(ctx, st); err != nil {
			nd.mu.Lock()
			nd.statusDirty = true
			nd.mu.Unlock()
			nd.requeue(pods)
			return err
		}
	}
	if len(pods) == 0 {
		return nil
	}
	failed, err := nd.sendPods(ctx, pods)
	nd.requeue(failed)
	return err
}

// requeue marks pods to be sent again unless a newer change replaced them.
func (nd *simNode) requeue(pods []*nsv2.PodStatus) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for _, p := range pods {
		if _, newer := nd.podsDirty[p.UID]; !newer {
			nd.podsDirty[p.UID] = p
		}
	}
}

// count counts a report's outcome; a report abandoned because the kubelet
// is stopping is not counted.
func (nd *simNode) count(ctx context.Context, kind string, err error) {
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "failed"
		nd.k.stats.Failed.Add(1)
	} else if kind == "status" {
		nd.k.stats.StatusReports.Add(1)
	} else {
		nd.k.stats.PodReports.Add(1)
	}
	nd.k.reports.WithLabelValues(kind, outcome).Inc()
}

// sendStatus makes one ReportStatus call at the kubelet's version.
func (nd *simNode) sendStatus(ctx context.Context, st *nsv2.NodeStatus) error {
	ctx, cancel := context.WithTimeout(ctx, nd.k.cfg.CallTimeout)
	defer cancel()
	var accepted bool
	var err error
	if nd.k.cfg.API == "v1" {
		var down *nsv1.NodeStatus
		if down, err = nsv2.NodeStatusToV1(st); err == nil {
			var ack *nsv1.Ack
			if ack, err = nsv1.NewClient(nd.client).ReportStatus(ctx, down); err == nil {
				accepted = ack.Accepted
			}
		}
	} else {
		var ack *nsv2.Ack
		if ack, err = nsv2.NewClient(nd.client).ReportStatus(ctx, st); err == nil {
			accepted = ack.Accepted
		}
	}
	if err == nil && !accepted {
		err = fmt.Errorf("node controller did not accept the status of %s", nd.name)
	}
	nd.count(ctx, "status", err)
	return err
}

// sendPods makes one ReportPodStatuses batch call and returns the pods
// whose items failed.
func (nd *simNode) sendPods(ctx context.Context, pods []*nsv2.PodStatus) ([]*nsv2.PodStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, nd.k.cfg.CallTimeout)
	defer cancel()
	var errs []error
	if nd.k.cfg.API == "v1" {
		down := make([]*nsv1.PodStatus, len(pods))
		for i, p := range pods {
			down[i], _ = nsv2.PodStatusToV1(p)
		}
		res, err := nsv1.NewClient(nd.client).ReportPodStatuses(ctx, down)
		if err != nil {
			nd.count(ctx, "pods", err)
			return pods, err
		}
		for _, r := range res {
			errs = append(errs, r.Err)
		}
	} else {
		res, err := nsv2.NewClient(nd.client).ReportPodStatuses(ctx, pods)
		if err != nil {
			nd.count(ctx, "pods", err)
			return pods, err
		}
		for _, r := range res {
			errs = append(errs, r.Err)
		}
	}
	var failed []*nsv2.PodStatus
	var first error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, pods[i])
			if first == nil {
				first = err
			}
		}
	}
	nd.count(ctx, "pods", first)
	return failed, first
}
