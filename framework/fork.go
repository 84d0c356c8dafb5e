package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
)

// Fork mode keeps an earlier contract version alive on both sides, so that
// peers still at that version (external extenders, say) keep working while
// the components move on. The server converts calls at the earlier version up
// and handles them with the current handlers; the client converts its calls
// down for endpoints that agreed on the earlier version. Lockstep mode, with
// no fork, stays the default.

// MethodConversion converts one method's messages between the client's
// current version and an earlier one. Build it with [ConvertMethod];
// generated packages do.
type MethodConversion struct {
	down func(any) (any, error)
	// newOldResp allocates the earlier version's response; up converts it.
	newOldResp func() any
	up         func(any) (any, error)
}

// ConvertMethod builds a client-side conversion for a method: down turns the
// current version's request into the earlier one's, up turns the earlier
// version's response into the current one's. For batch methods they convert
// each item.
//
// For generated code: lockstep-gen emits one per method of a fork (forkFrom) into ClientConfig.Fork.
func ConvertMethod[Req, Resp, OldReq, OldResp any](down func(*Req) (*OldReq, error), up func(*OldResp) (*Resp, error)) MethodConversion {
	return MethodConversion{
		down: func(v any) (any, error) {
			req, ok := v.(*Req)
			if !ok {
				return nil, Errorf(CodeInternal, "conversion expects %T, got %T", req, v)
			}
			return down(req)
		},
		newOldResp: func() any { return new(OldResp) },
		up: func(v any) (any, error) {
			old, ok := v.(*OldResp)
			if !ok {
				return nil, Errorf(CodeInternal, "conversion expects %T, got %T", old, v)
			}
			return up(old)
		},
	}
}

// TopicConversion converts the objects of one topic from an earlier
// contract version's form to the client's current one, so that an
// informer of the current version can watch a server that holds only the
// earlier form. Build it with [ConvertTopic]; generated packages do.
type TopicConversion struct {
	// up decodes an object of the earlier version's form, converts it and
	// encodes the result.
	up func(raw []byte) ([]byte, error)
}

// ConvertTopic builds a client-side conversion for a topic: up turns an
// object of the earlier version's form into the current one's. A client
// converts each object once per change it reads, whatever the number of
// its informers of the topic; they all see the current form.
//
// For generated code: lockstep-gen emits one per topic of a fork (forkFrom) into ClientConfig.Fork.
func ConvertTopic[Obj, OldObj any](up func(*OldObj) (*Obj, error)) TopicConversion {
	return TopicConversion{up: func(raw []byte) ([]byte, error) {
		old := new(OldObj)
		if err := frames.UnmarshalShared(raw, old); err != nil {
			return nil, Errorf(CodeInvalidArgument, "object does not decode as %T: %v", old, err)
		}
		obj, err := up(old)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			return nil, Errorf(CodeInternal, "conversion returned no %T", obj)
		}
		return marshal(obj)
	}}
}

// Fork is an earlier contract version a client keeps speaking, with the
// conversions of its methods and topics.
type Fork struct {
	// Contract is the earlier version.
	Contract *Contract
	// Methods converts each method the two versions share, by name. A method
	// the earlier version lacks is never routed to its endpoints.
	Methods map[string]MethodConversion
	// Topics converts the objects of each topic the two versions share, by
	// name, up to the current version: an informer watches endpoints that
	// agreed on the earlier version through it. A topic the earlier
	// version lacks is never watched at its endpoints (the blocked log
	// says so).
	Topics map[string]TopicConversion
}

// peerVersion is a contract version the client speaks, with what it takes
// to speak it: conversions for a fork version, validation for a pinned peer.
type peerVersion struct {
	contract *Contract
	// conversions is nil for the client's own version.
	conversions map[string]MethodConversion
	// topics converts the objects of a fork version's topics up; nil for
	// the client's own version.
	topics map[string]TopicConversion
	// pinned marks the version of a pinned peer, whose answers are validated
	// against the schemas because it never proved it speaks the contract.
	pinned bool
	// paths are a pinned peer's own paths by method ([PinnedPeer].Paths).
	paths map[string]string
}

// conversion returns the conversion of method at v, or nil at the client's
// own version.
func (v *peerVersion) conversion(method string) *MethodConversion {
	if v.conversions == nil {
		return nil
	}
	conv, ok := v.conversions[method]
	if !ok {
		return nil
	}
	return &conv
}

// supports reports whether a call of method can travel at v.
func (v *peerVersion) supports(method string) bool {
	if v.conversions == nil {
		_, ok := v.contract.Method(method)
		return ok
	}
	_, ok := v.conversions[method]
	return ok
}

// checkForkPair checks that old is an earlier version of current: same
// contract and roles, a lower version, and shared methods of the same kind.
func checkForkPair(old, current *Contract) error {
	if old == nil {
		return fmt.Errorf("fork without a contract")
	}
	if old.Name() != current.Name() || old.Server() != current.Server() || old.Client() != current.Client() {
		return fmt.Errorf("%s %s is not an earlier version of %s (%s → %s)", old.Name(), old.Version(),
			current.Name(), current.Client(), current.Server())
	}
	if !old.version.LessThan(current.version) {
		return fmt.Errorf("fork version %s is not earlier than %s", old.Version(), current.Version())
	}
	for _, m := range current.Methods() {
		oldDecl, inOld := old.Method(m)
		newDecl, _ := current.Method(m)
		if inOld && oldDecl.Batch != newDecl.Batch {
			return fmt.Errorf("method %s is a batch method in one version and not the other", m)
		}
	}
	return nil
}

// watchable reports whether an informer of topic, selecting by fields, can
// watch at v: v is the client's own version (own), or a fork version that
// declares the topic, with a conversion for it, and every field among its
// selectors. When it cannot, why says so.
func (v *peerVersion) watchable(own *Contract, topic string, fields []string) (why string, ok bool) {
	if v.pinned {
		return "a pinned peer holds no topics", false
	}
	if v.contract == own {
		return "", true
	}
	decl, declared := v.contract.Topic(topic)
	if !declared {
		return v.contract.Version() + " declares no topic " + topic, false
	}
	if _, ok := v.topics[topic]; !ok {
		return "the client's fork of " + v.contract.Version() + " has no conversion for topic " + topic, false
	}
	for _, f := range fields {
		if !slices.Contains(decl.Selectors, f) {
			return "topic " + topic + " at " + v.contract.Version() + " has no selector " + f, false
		}
	}
	return "", true
}

// topicConversion returns the conversion of topic's objects at v, or nil
// at the client's own version.
func (v *peerVersion) topicConversion(topic string) *TopicConversion {
	if v.topics == nil {
		return nil
	}
	conv, ok := v.topics[topic]
	if !ok {
		return nil
	}
	return &conv
}

// checkFork checks a client's fork: an earlier version with a conversion for
// every method and topic both versions declare, and none for others.
func checkFork(current *Contract, f Fork) error {
	if err := checkForkPair(f.Contract, current); err != nil {
		return err
	}
	for _, m := range current.Methods() {
		if _, inOld := f.Contract.Method(m); !inOld {
			continue
		}
		if _, ok := f.Methods[m]; !ok {
			return fmt.Errorf("fork %s has no conversion for method %s", f.Contract.Version(), m)
		}
	}
	for m := range f.Methods {
		if _, ok := f.Contract.Method(m); !ok {
			return fmt.Errorf("fork %s converts %s, which it does not declare", f.Contract.Version(), m)
		}
	}
	for _, t := range current.Topics() {
		if _, inOld := f.Contract.Topic(t); !inOld {
			continue
		}
		if _, ok := f.Topics[t]; !ok {
			return fmt.Errorf("fork %s has no conversion for topic %s", f.Contract.Version(), t)
		}
	}
	for _, t := range sortedKeys(f.Topics) {
		_, inOld := f.Contract.Topic(t)
		_, inCurrent := current.Topic(t)
		if !inOld || !inCurrent {
			return fmt.Errorf("fork %s converts topic %s, which both versions do not declare", f.Contract.Version(), t)
		}
		if f.Topics[t].up == nil {
			return fmt.Errorf("fork %s: the conversion of topic %s was not built with ConvertTopic", f.Contract.Version(), t)
		}
	}
	return nil
}

// ForkUnary serves a unary method of an earlier contract version with the
// current version's handler: each call's request is validated against the
// earlier schema, converted up, handled once by the handler registered with
// [HandleUnary] for current, and its answer converted back down. To handle an
// earlier version by hand instead, register a handler for it with
// [HandleUnary]. It panics on setup mistakes.
//
// For generated code: lockstep-gen emits these registrations for a fork (forkFrom).
func ForkUnary[OldReq, OldResp, Req, Resp any](s *Server, old, current *Contract, method string,
	up func(*OldReq) (*Req, error), down func(*Resp) (*OldResp, error)) {
	decl := mustMethod(old, method, false)
	mustMethod(current, method, false)
	mustForkOf(old, current)
	f := &forkedMethod[OldReq, OldResp, Req, Resp]{s: s, old: old, current: current, decl: decl, up: up, down: down}
	s.register(old, method, &methodHandler{forkOf: current, invoke: f.invokeAny, serve: f.serve})
}

// ForkBatch is [ForkUnary] for batch methods: each item is converted up,
// handled by the current version's handler, and its answer converted down.
//
// For generated code: lockstep-gen emits these registrations for a fork (forkFrom).
func ForkBatch[OldReq, OldResp, Req, Resp any](s *Server, old, current *Contract, method string,
	up func(*OldReq) (*Req, error), down func(*Resp) (*OldResp, error)) {
	decl := mustMethod(old, method, true)
	mustMethod(current, method, true)
	mustForkOf(old, current)
	f := &forkedMethod[OldReq, OldResp, Req, Resp]{s: s, old: old, current: current, decl: decl, up: up, down: down}
	maxItems := s.batchItems(old, method)
	s.register(old, method, &methodHandler{batch: true, forkOf: current, invoke: f.invokeAny, serve: func(ctx context.Context, call *Call, body []byte) ([]byte, error) {
		return s.calls.Items(ctx, call.Header, body, maxItems, func(ctx context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error) {
			itemCall := *call
			itemCall.Batch, itemCall.Item, itemCall.Header = true, i, h
			return f.serve(ctx, &itemCall, raw)
		})
	}})
}

// forkedMethod is a method of an earlier version (old) served by the
// handler of a later one (current): up converts a request of old to
// current's, down converts current's answer back. Fork mode and a
// compatible version's methods are served through it.
type forkedMethod[OldReq, OldResp, Req, Resp any] struct {
	s            *Server
	old, current *Contract
	decl         methodDecl // the method at old
	up           func(*OldReq) (*Req, error)
	down         func(*Resp) (*OldResp, error)
}

// serve decodes and validates a request of old, serves it with current's
// handler (invoke) and encodes the answer of old.
func (f *forkedMethod[OldReq, OldResp, Req, Resp]) serve(ctx context.Context, call *Call, body []byte) ([]byte, error) {
	oldReq := new(OldReq)
	if err := decodeMessage(f.old, f.decl.Request, body, oldReq); err != nil {
		return nil, err
	}
	oldResp, err := f.invoke(ctx, call, oldReq)
	if err != nil {
		return nil, err
	}
	return encodeResponse[OldResp](oldResp)
}

// invokeAny is the invoke of a method served by conversion: it converts
// an already decoded request of old up, runs current's handler (itself
// perhaps served by conversion, along a chain of compatible versions),
// and converts the answer down.
func (f *forkedMethod[OldReq, OldResp, Req, Resp]) invokeAny(ctx context.Context, call *Call) (any, error) {
	oldReq, ok := call.Request.(*OldReq)
	if !ok {
		return nil, Errorf(CodeInternal, "%s at %s: the request is %T, not %T", call.Method, f.old.Version(), call.Request, oldReq)
	}
	return f.invoke(ctx, call, oldReq)
}

// invoke converts a decoded request of old up, runs current's handler on
// it, and converts the answer down.
func (f *forkedMethod[OldReq, OldResp, Req, Resp]) invoke(ctx context.Context, call *Call, oldReq *OldReq) (*OldResp, error) {
	old, current := f.old, f.current
	target := f.s.handlerOf(current, call.Method)
	if target == nil || target.invoke == nil {
		return nil, Errorf(CodeInternal, "%s %s has no handler for %s to serve %s calls with", current.Name(), current.Version(), call.Method, old.Version())
	}
	req, err := f.up(oldReq)
	if err != nil {
		return nil, convError(call.Method, old.Version(), current.Version(), err)
	}
	call.Request = req
	out, err := target.invoke(ctx, call)
	if err != nil {
		return nil, processedError(err)
	}
	resp, ok := out.(*Resp)
	if !ok || resp == nil {
		return nil, Errorf(CodeInternal, "handler returned %T, not %T", out, resp)
	}
	oldResp, err := f.down(resp)
	if err != nil {
		return nil, convError(call.Method, current.Version(), old.Version(), err)
	}
	return oldResp, nil
}

// convError keeps a conversion's own code (a conversion may refuse with
// invalid_argument) and calls anything else internal.
func convError(method, from, to string, err error) error {
	if CodeOf(err) != CodeInternal {
		return err
	}
	return Errorf(CodeInternal, "%s: converting from %s to %s: %v", method, from, to, err)
}

func mustForkOf(old, current *Contract) {
	if err := checkForkPair(old, current); err != nil {
		panic("lockstep: " + err.Error())
	}
}
