package extender

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

// serverV2 serves extender 2.0.0.
type serverV2 struct{ e *Extender }

// Filter serves 2.0.0's Filter.
func (s serverV2) Filter(ctx context.Context, req *extv2.FilterRequest) (*extv2.FilterResponse, error) {
	out := s.e.filter(req.Pod, req.Nodes, nil)
	s.e.count(ctx, extv2.MethodFilter, nil)
	s.e.applied(ctx)
	return out, nil
}

// Prioritize serves 2.0.0's Prioritize.
func (s serverV2) Prioritize(ctx context.Context, req *extv2.PrioritizeRequest) (*extv2.PrioritizeResponse, error) {
	out := s.e.prioritize(req.Nodes)
	s.e.count(ctx, extv2.MethodPrioritize, nil)
	s.e.applied(ctx)
	return out, nil
}

// Bind serves 2.0.0's Bind: a pod bound elsewhere is a conflict.
func (s serverV2) Bind(ctx context.Context, req *extv2.BindRequest) (*extv2.BindResponse, error) {
	err := s.e.bind(req.Pod, req.Node)
	s.e.count(ctx, extv2.MethodBind, err)
	if err != nil {
		return nil, err
	}
	s.e.applied(ctx)
	return &extv2.BindResponse{}, nil
}

// serverV1 serves extender 1.0.0, the Kubernetes protocol, over lockstep
// and plain HTTP alike.
type serverV1 struct{ e *Extender }

// Filter answers in the form asked: NodeNames for NodeNames, the very node
// objects sent for Nodes.
func (s serverV1) Filter(ctx context.Context, args *extv1.ExtenderArgs) (*extv1.ExtenderFilterResult, error) {
	out, err := s.filter(args)
	s.e.count(ctx, extv1.MethodFilter, err)
	if err == nil {
		s.e.applied(ctx)
	}
	return out, err
}

func (s serverV1) filter(args *extv1.ExtenderArgs) (*extv1.ExtenderFilterResult, error) {
	req, err := extv2.FilterRequestFromV1(args)
	if err != nil {
		return nil, err
	}
	var unschedulable map[string]bool
	byName := args.NodeNames.IsValue()
	if !byName {
		list, err := kube.DecodeNodeList(json.RawMessage(args.Nodes))
		if err != nil {
			return nil, framework.NewError(framework.CodeInvalidArgument, err)
		}
		if list != nil {
			unschedulable = map[string]bool{}
			for _, n := range list.Items {
				unschedulable[n.Name] = n.Spec.Unschedulable
			}
		}
	}
	resp := s.e.filter(req.Pod, req.Nodes, unschedulable)
	out, err := extv2.FilterResponseToV1(resp)
	if err != nil || byName || len(args.Nodes) == 0 || string(args.Nodes) == "null" {
		return out, err
	}
	kept, err := kube.KeepNodes(json.RawMessage(args.Nodes), func(name string) bool { return slices.Contains(resp.Feasible, name) })
	if err != nil {
		return nil, framework.NewError(framework.CodeInvalidArgument, err)
	}
	out.Nodes, out.NodeNames = extv1.NodeList(kept), jsonwire.Nullable[[]string]{}
	return out, nil
}

// Prioritize scores from 0 to 10, as the Kubernetes protocol does.
func (s serverV1) Prioritize(ctx context.Context, args *extv1.ExtenderArgs) (*extv1.HostPriorityList, error) {
	out, err := func() (*extv1.HostPriorityList, error) {
		req, err := extv2.PrioritizeRequestFromV1(args)
		if err != nil {
			return nil, err
		}
		return extv2.PrioritizeResponseToV1(s.e.prioritize(req.Nodes))
	}()
	s.e.count(ctx, extv1.MethodPrioritize, err)
	if err == nil {
		s.e.applied(ctx)
	}
	return out, err
}

// Bind reports a refused binding in Error, as the Kubernetes protocol does.
func (s serverV1) Bind(ctx context.Context, args *extv1.ExtenderBindingArgs) (*extv1.ExtenderBindingResult, error) {
	req, _ := extv2.BindRequestFromV1(args)
	err := s.e.bind(req.Pod, req.Node)
	s.e.count(ctx, extv1.MethodBind, err)
	if err != nil {
		msg := err.Error()
		if fe := (*framework.Error)(nil); errors.As(err, &fe) {
			msg = fe.Message()
		}
		return &extv1.ExtenderBindingResult{Error: &msg}, nil
	}
	s.e.applied(ctx)
	empty := ""
	return &extv1.ExtenderBindingResult{Error: &empty}, nil
}

// ProcessPreemption serves 2.0.0's ProcessPreemption: preempting pods on
// a node the pod may not go to would not help, so such candidates are
// dropped; the others keep every victim proposed.
func (s serverV2) ProcessPreemption(ctx context.Context, req *extv2.PreemptRequest) (*extv2.PreemptResponse, error) {
	out := s.e.preempt(req)
	s.e.count(ctx, extv2.MethodProcessPreemption, nil)
	return out, nil
}

// ProcessPreemption serves 1.0.0's ProcessPreemption, victims whole or by
// UID, answered by UID.
func (s serverV1) ProcessPreemption(ctx context.Context, args *extv1.ExtenderPreemptionArgs) (*extv1.ExtenderPreemptionResult, error) {
	out, err := func() (*extv1.ExtenderPreemptionResult, error) {
		req, err := extv2.PreemptRequestFromV1(args)
		if err != nil {
			return nil, err
		}
		return extv2.PreemptResponseToV1(s.e.preempt(req))
	}()
	s.e.count(ctx, extv1.MethodProcessPreemption, err)
	return out, err
}
