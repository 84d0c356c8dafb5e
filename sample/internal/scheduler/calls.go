package scheduler

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/framework"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nhv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
)

// The scheduler's calls, each exactly one call of its client at the
// scheduler's own version; the runtime converts it down for a fork
// version's endpoint. The scheduler thinks in 2.0.0's terms; a 1.0.0
// scheduler converts to and from 1.0.0 around its calls, as the old build
// would have built its messages.

// Filter asks the named extender which of nodes the pod fits on.
func (s *Scheduler) Filter(ctx context.Context, name string, pod extv2.PodRef, nodes []string) (*extv2.FilterResponse, error) {
	e := s.extender(name)
	if e == nil {
		return nil, fmt.Errorf("no extender %s", name)
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	req := &extv2.FilterRequest{Pod: pod, Nodes: nodes}
	if s.cfg.API == "v2" {
		return extv2.NewClient(e.client).Filter(ctx, req, e.callOptions()...)
	}
	args, err := extv2.ArgsToV1(pod, nodes, s.objects(e))
	if err != nil {
		return nil, err
	}
	res, err := extv1.NewClient(e.client).Filter(ctx, args, e.callOptions()...)
	if err != nil {
		return nil, err
	}
	if e.cfg.NodeCacheCapable {
		return extv2.FilterResponseFromV1(res)
	}
	return extv2.FilterResponseFromV1Nodes(res)
}

// Prioritize asks the named extender to score nodes for the pod.
func (s *Scheduler) Prioritize(ctx context.Context, name string, pod extv2.PodRef, nodes []string) (*extv2.PrioritizeResponse, error) {
	e := s.extender(name)
	if e == nil {
		return nil, fmt.Errorf("no extender %s", name)
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	req := &extv2.PrioritizeRequest{Pod: pod, Nodes: nodes}
	if s.cfg.API == "v2" {
		return extv2.NewClient(e.client).Prioritize(ctx, req, e.callOptions()...)
	}
	args, err := extv2.ArgsToV1(pod, nodes, s.objects(e))
	if err != nil {
		return nil, err
	}
	res, err := extv1.NewClient(e.client).Prioritize(ctx, args, e.callOptions()...)
	if err != nil {
		return nil, err
	}
	return extv2.PrioritizeResponseFromV1(res)
}

// Bind asks the named extender to bind the pod to node.
func (s *Scheduler) Bind(ctx context.Context, name string, pod extv2.PodRef, node string) error {
	e := s.extender(name)
	if e == nil {
		return fmt.Errorf("no extender %s", name)
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	req := &extv2.BindRequest{Pod: pod, Node: node}
	if s.cfg.API == "v2" {
		_, err := extv2.NewClient(e.client).Bind(ctx, req, e.callOptions()...)
		return err
	}
	args, _ := extv2.BindRequestToV1(req)
	res, err := extv1.NewClient(e.client).Bind(ctx, args, e.callOptions()...)
	if err != nil {
		return err
	}
	_, err = extv2.BindResponseFromV1(res)
	return err
}

// CheckNode asks the node controller for a node's health now.
func (s *Scheduler) CheckNode(ctx context.Context, node string) (*nhv2.NodeHealth, error) {
	if s.cfg.API == "v2" {
		return nhv2.NewClient(s.nodes).CheckNode(ctx, &nhv2.NodeRef{NodeName: node})
	}
	h, err := nhv1.NewClient(s.nodes).CheckNode(ctx, &nhv1.NodeRef{NodeName: node})
	if err != nil {
		return nil, err
	}
	return nhv2.NodeHealthFromV1(h)
}

// PostBinding binds the pod to node at the node controller, as
// kube-scheduler posts a Binding: the node controller assigns the pod to
// the node's kubelet. Binding it again to the same node is harmless, so a
// call that failed may be sent again.
func (s *Scheduler) PostBinding(ctx context.Context, pod extv2.PodRef, node string) error {
	b := &nhv2.Binding{Pod: nhv2.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, NodeName: node,
		Requests: nhv2.PodRequests{CPUMillis: pod.Requests.CPUMillis, MemoryBytes: pod.Requests.MemoryBytes}, Priority: pod.Priority}
	if s.cfg.API == "v2" {
		_, err := nhv2.NewClient(s.nodes).Bind(ctx, b)
		return err
	}
	down, err := nhv2.BindingToV1(b)
	if err != nil {
		return err
	}
	_, err = nhv1.NewClient(s.nodes).Bind(ctx, down)
	return err
}

// Preempt asks the named extender which of the preemption candidates it
// agrees with (kube-scheduler's ProcessPreemption, preemptVerb): victims
// travel whole to an extender that does not cache nodes, else by UID.
func (s *Scheduler) Preempt(ctx context.Context, name string, pod extv2.PodRef, candidates []extv2.PreemptRequestCandidatesItem) (*extv2.PreemptResponse, error) {
	e := s.extender(name)
	if e == nil {
		return nil, fmt.Errorf("no extender %s", name)
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	req := &extv2.PreemptRequest{Pod: pod, Candidates: candidates}
	if s.cfg.API == "v2" {
		return extv2.NewClient(e.client).ProcessPreemption(ctx, req, e.callOptions()...)
	}
	args, err := extv2.PreemptRequestToV1(req, s.objects(e))
	if err != nil {
		return nil, err
	}
	res, err := extv1.NewClient(e.client).ProcessPreemption(ctx, args, e.callOptions()...)
	if err != nil {
		return nil, err
	}
	return extv2.PreemptResponseFromV1(res)
}

// Evict has the node controller evict victims from node to make room for
// pod (preemption): it unbinds them, and their kubelet stops them. It
// fails, evicting none, if one is bound elsewhere or has a priority not
// below the pod's.
func (s *Scheduler) Evict(ctx context.Context, pod extv2.PodRef, node string, victims []nhv2.BoundPod) error {
	e := &nhv2.Eviction{NodeName: node, Victims: make([]nhv2.PodRef, len(victims)),
		Preemptor: nhv2.Preemptor{Pod: nhv2.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, Priority: extv2.PriorityOf(pod),
			Requests: nhv2.PodRequests{CPUMillis: pod.Requests.CPUMillis, MemoryBytes: pod.Requests.MemoryBytes}}}
	for i, v := range victims {
		e.Victims[i] = v.Pod
	}
	if s.cfg.API == "v2" {
		_, err := nhv2.NewClient(s.nodes).Evict(ctx, e)
		return err
	}
	down, err := nhv2.EvictionToV1(e)
	if err != nil {
		return err
	}
	_, err = nhv1.NewClient(s.nodes).Evict(ctx, down)
	return err
}

// callOptions are the options of every call to the extender. A Kubernetes
// extender (pinned) is called as kube-scheduler calls it, once per verb: a
// refused connection fails the call at once, since there is no session to
// wait for, instead of holding the pod through the endpoint's backoff
// until httpTimeout, and the pod's own bound, run out (the pod then failed
// even with the extender ignorable, blamed on the next call). Nor is an
// ignorable extender waited for: the pod can do without it.
func (e *extender) callOptions() []framework.CallOption {
	if e.cfg.PinnedURL != "" || e.cfg.Ignorable {
		return []framework.CallOption{framework.FailFast()}
	}
	return nil
}
