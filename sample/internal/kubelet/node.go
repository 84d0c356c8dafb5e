package kubelet

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/framework"
	nsv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nsv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	nsv21 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2_1"
)

// simNode is one simulated node: its status and pods, what changed since
// it last reported, and its session.
type simNode struct {
	k      *Kubelet
	name   string
	client *framework.Client
	rand   *mathrand.Rand
	// own is the node's own transport (Config.NodeTLS), nil when it shares
	// the kubelet's.
	own *timedTransport

	mu           sync.Mutex
	diskPressure bool
	// pods are the pods the node runs (Pending until started, then
	// Running), in the order they were assigned; ended are pods it ended
	// whose assignment has not gone yet, so that it does not run them
	// again.
	pods        []*nsv2.PodStatus
	ended       map[string]bool
	statusDirty bool
	podsDirty   map[string]*nsv2.PodStatus
	wake        chan struct{}
	// synced is set once the node's PodAssignment watch had its first
	// snapshot.
	synced atomic.Bool
	// stopped ends the node's loops: the node was killed (Kubelet.Stop).
	stopped  chan struct{}
	stopOnce sync.Once
}

func newNode(k *Kubelet, name string, seed int64) *simNode {
	return &simNode{k: k, name: name, rand: mathrand.New(mathrand.NewPCG(uint64(seed), 7)),
		statusDirty: true, ended: map[string]bool{}, podsDirty: map[string]*nsv2.PodStatus{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// podLocked returns the pod the node runs with uid and its index, or nil.
func (nd *simNode) podLocked(uid string) (*nsv2.PodStatus, int) {
	for i, p := range nd.pods {
		if p.UID == uid {
			return p, i
		}
	}
	return nil, -1
}

// assigned acts on a pod's assignment as the node's watch delivered it:
// it runs a pod assigned to it that it does not run (Pending, then Running
// after StartAfter), stops one whose desired state is Stopped (reporting
// it Succeeded), and stops one assigned to another node without a report
// (the selection delivers none, but the node does not rely on it).
func (nd *simNode) assigned(a *nsv2.PodAssignment) {
	if a.NodeName != nd.name {
		nd.k.stats.ForeignAssignments.Add(1)
		nd.unassigned(a.UID)
		return
	}
	nd.mu.Lock()
	defer nd.mu.Unlock()
	p, i := nd.podLocked(a.UID)
	switch {
	case nd.ended[a.UID]:
	case a.DesiredState == nsv2.PodAssignmentDesiredStateStopped && p != nil:
		nd.endLocked(i, nsv2.PodStatusPhaseSucceeded)
		nd.k.stats.PodsStopped.Add(1)
	case a.DesiredState == nsv2.PodAssignmentDesiredStateRunning && p == nil:
		ready, restarts := false, int64(0)
		p = &nsv2.PodStatus{NodeName: nd.name, Namespace: a.Namespace, Name: a.Name, UID: a.UID,
			Phase: nsv2.PodStatusPhasePending, Ready: &ready, RestartCount: &restarts}
		nd.pods = append(nd.pods, p)
		nd.podsDirty[p.UID] = p
		nd.k.stats.PodsStarted.Add(1)
		time.AfterFunc(nd.k.cfg.StartAfter, func() { nd.started(a.UID) })
	default:
		return
	}
	nd.pokeLocked()
}

// started makes a pending pod Running: its containers came up.
func (nd *simNode) started(uid string) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if p, _ := nd.podLocked(uid); p != nil && p.Phase == nsv2.PodStatusPhasePending {
		p.Phase, *p.Ready = nsv2.PodStatusPhaseRunning, true
		nd.podsDirty[uid] = p
		nd.pokeLocked()
	}
}

// unassigned stops a pod whose assignment went (or moved to another
// node): the node controller no longer holds it, so nothing is reported.
func (nd *simNode) unassigned(uid string) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	delete(nd.ended, uid)
	delete(nd.podsDirty, uid)
	if _, i := nd.podLocked(uid); i >= 0 {
		nd.pods = append(nd.pods[:i], nd.pods[i+1:]...)
		nd.k.stats.PodsStopped.Add(1)
	}
}

// endLocked ends the pod at index i in phase (Succeeded, Failed): it is
// reported once more, then forgotten.
func (nd *simNode) endLocked(i int, phase nsv2.PodStatusPhase) {
	p := nd.pods[i]
	p.Phase, *p.Ready = phase, false
	nd.pods = append(nd.pods[:i], nd.pods[i+1:]...)
	nd.ended[p.UID] = true
	nd.podsDirty[p.UID] = p
}

// running returns the UIDs of the pods the node runs (Pending or Running).
func (nd *simNode) running() []string {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	out := make([]string, len(nd.pods))
	for i, p := range nd.pods {
		out[i] = p.UID
	}
	return out
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
		Capacity:    nsv2.Resources{CPUMillis: nd.k.cfg.CPUMillis, MemoryBytes: 16 << 30, Pods: 110},
		Allocatable: nsv2.Resources{CPUMillis: nd.k.cfg.CPUMillis - SystemReservedCPUMillis, MemoryBytes: 15 << 30, Pods: 110},
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
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.pokeLocked()
}

func (nd *simNode) pokeLocked() {
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
	if len(nd.pods) == 0 {
		return
	}
	i := nd.rand.IntN(len(nd.pods))
	p := nd.pods[i]
	switch {
	case p.Phase != nsv2.PodStatusPhaseRunning:
	case nd.rand.IntN(2) == 0:
		*p.RestartCount++
		nd.podsDirty[p.UID] = p
	case nd.k.cfg.PodsEnd:
		nd.endLocked(i, nsv2.PodStatusPhaseSucceeded)
		nd.k.stats.PodsEnded.Add(1)
	}
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
	// refresh marks the status to be reported again every StatusEvery,
	// the first time at a random point of the first period.
	var refresh <-chan time.Time
	if every := nd.k.cfg.StatusEvery; every > 0 {
		first := time.NewTimer(time.Duration(nd.rand.Int64N(int64(every))))
		defer first.Stop()
		refresh = first.C
	}
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
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
		case <-refresh:
			if ticker == nil {
				ticker = time.NewTicker(nd.k.cfg.StatusEvery)
				refresh = ticker.C
			}
			nd.mu.Lock()
			nd.statusDirty = true
			nd.mu.Unlock()
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
		if p.Ready != nil {
			ready := *p.Ready
			cp.Ready = &ready
		}
		if p.RestartCount != nil {
			restarts := *p.RestartCount
			cp.RestartCount = &restarts
		}
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

// requeue marks pods to be sent again unless a newer change replaced them
// or the pod is no longer the node's.
func (nd *simNode) requeue(pods []*nsv2.PodStatus) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for _, p := range pods {
		if _, newer := nd.podsDirty[p.UID]; newer {
			continue
		}
		if cur, _ := nd.podLocked(p.UID); cur != nil || nd.ended[p.UID] {
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

// kernelVersion is the kernel version a 2.1.0 kubelet reports for its
// simulated nodes (NodeStatus.kernelVersion, new in nodestatus 2.1.0).
var kernelVersion = "6.12.0-lockstep"

// sendStatus makes one ReportStatus call at the kubelet's version. At
// v2.1 it converts the status up with the generated conversion and adds
// the kernel version; the session may have agreed on 2.0.0 with a node
// controller not yet upgraded, and the runtime converts it down again,
// dropping the kernel version.
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
	} else if nd.k.cfg.API == "v2.1" {
		up := new(nsv21.NodeStatus)
		if err = nsv21.Convert_v2_NodeStatus_To_v2_1_NodeStatus(st, up); err == nil {
			up.KernelVersion = &kernelVersion
			var ack *nsv21.Ack
			if ack, err = nsv21.NewClient(nd.client).ReportStatus(ctx, up); err == nil {
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
	} else if nd.k.cfg.API == "v2.1" {
		up := make([]*nsv21.PodStatus, len(pods))
		for i, p := range pods {
			up[i] = new(nsv21.PodStatus)
			if err := nsv21.Convert_v2_PodStatus_To_v2_1_PodStatus(p, up[i]); err != nil {
				nd.count(ctx, "pods", err)
				return pods, err
			}
		}
		res, err := nsv21.NewClient(nd.client).ReportPodStatuses(ctx, up)
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
		switch {
		case err == nil:
		case framework.CodeOf(err) == framework.CodePermissionDenied:
			// The pod is not bound to this node (any more): its status
			// is not the node's to report, and its watch stops it.
			nd.k.stats.PodReportsRefused.Add(1)
			nd.k.logger.Info("the node controller refused a pod's status: the pod is not bound to this node", "node", nd.name, "pod", pods[i].UID, "err", err)
		default:
			failed = append(failed, pods[i])
			if first == nil {
				first = err
			}
		}
	}
	nd.count(ctx, "pods", first)
	return failed, first
}

// watch runs the node's informer of the PodAssignment topic, at the
// kubelet's version, until ctx ends: it selects the pods assigned to the
// node (nodeName), as a Kubernetes kubelet watches its pods with
// fieldSelector=spec.nodeName, and they are what the node runs. A pod
// rebound elsewhere is a delete for it.
func (nd *simNode) watch(ctx context.Context) error {
	if nd.k.cfg.API == "v1" {
		up := func(a *nsv1.PodAssignment) *nsv2.PodAssignment {
			p, err := nsv2.PodAssignmentFromV1(a)
			if err != nil {
				nd.k.logger.Warn("a pod assignment the kubelet cannot read", "uid", a.UID, "err", err)
				return nil
			}
			return p
		}
		i, err := nsv1.WatchPodAssignment(ctx, nd.client, framework.InformerHandlers[nsv1.PodAssignment]{
			OnAdd: func(_ string, a *nsv1.PodAssignment) {
				if p := up(a); p != nil {
					nd.assigned(p)
				}
			},
			OnUpdate: func(_ string, _, a *nsv1.PodAssignment) {
				if p := up(a); p != nil {
					nd.assigned(p)
				}
			},
			OnDelete: func(uid string, _ *nsv1.PodAssignment) { nd.unassigned(uid) },
		}, nsv1.SelectNodeName(nd.name))
		if err != nil {
			return err
		}
		nd.waitSynced(ctx, i)
		<-i.Done()
		return nil
	}
	if nd.k.cfg.API == "v2.1" {
		down := func(a *nsv21.PodAssignment) *nsv2.PodAssignment {
			p := new(nsv2.PodAssignment)
			if err := nsv21.Convert_v2_1_PodAssignment_To_v2_PodAssignment(a, p); err != nil {
				nd.k.logger.Warn("a pod assignment the kubelet cannot read", "uid", a.UID, "err", err)
				return nil
			}
			return p
		}
		i, err := nsv21.WatchPodAssignment(ctx, nd.client, framework.InformerHandlers[nsv21.PodAssignment]{
			OnAdd: func(_ string, a *nsv21.PodAssignment) {
				if p := down(a); p != nil {
					nd.assigned(p)
				}
			},
			OnUpdate: func(_ string, _, a *nsv21.PodAssignment) {
				if p := down(a); p != nil {
					nd.assigned(p)
				}
			},
			OnDelete: func(uid string, _ *nsv21.PodAssignment) { nd.unassigned(uid) },
		}, nsv21.SelectNodeName(nd.name))
		if err != nil {
			return err
		}
		nd.waitSynced(ctx, i)
		<-i.Done()
		return nil
	}
	i, err := nsv2.WatchPodAssignment(ctx, nd.client, framework.InformerHandlers[nsv2.PodAssignment]{
		OnAdd:    func(_ string, a *nsv2.PodAssignment) { nd.assigned(a) },
		OnUpdate: func(_ string, _, a *nsv2.PodAssignment) { nd.assigned(a) },
		OnDelete: func(uid string, _ *nsv2.PodAssignment) { nd.unassigned(uid) },
	}, nsv2.SelectNodeName(nd.name))
	if err != nil {
		return err
	}
	nd.waitSynced(ctx, i)
	<-i.Done()
	return nil
}

// waitSynced sets nd.synced once the informer had its first snapshot.
func (nd *simNode) waitSynced(ctx context.Context, i interface{ WaitForSync(context.Context) error }) {
	if i.WaitForSync(ctx) == nil {
		nd.synced.Store(true)
	}
}
