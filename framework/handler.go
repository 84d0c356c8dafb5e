package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	"github.com/lockstep-dev/lockstep/framework/internal/dispatch"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Validator is implemented by generated message types whose generated
// checks cover their whole schema. The runtime calls Validate after decoding
// such a message instead of validating its JSON with jsonschema/v5.
//
// For generated code: lockstep-gen implements it on the message types it emits.
type Validator interface {
	Validate() error
}

// methodHandler serves one method of one contract version: it decodes and
// validates the body, runs the interceptors and handler, and encodes the
// answer.
type methodHandler struct {
	batch bool
	serve func(ctx context.Context, call *Call, body []byte) ([]byte, error)
	// invoke runs the interceptors and the typed handler on an already
	// decoded request (call.Request); fork mode calls it with converted
	// requests. For batch methods it handles one item.
	invoke func(ctx context.Context, call *Call) (any, error)
	// forkOf is, for a method served by conversion, the version whose
	// handler serves it.
	forkOf *Contract
}

// HandleUnary registers the handler of a unary method. It panics on setup
// mistakes: a method the contract does not declare, or a batch method.
//
// The handler sees only decoded, validated requests; an error it returns
// reaches the caller with its code ([NewError]), or as internal.
//
// For generated code: the typed servers lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
func HandleUnary[Req, Resp any](s *Server, c *Contract, method string, h func(context.Context, *Req) (*Resp, error)) {
	decl := mustMethod(c, method, false)
	run := s.callChain(func(ctx context.Context, call *Call) (any, error) {
		return h(context.WithValue(ctx, callKey{}, call), call.Request.(*Req))
	})
	s.register(c, method, &methodHandler{invoke: run, serve: func(ctx context.Context, call *Call, body []byte) ([]byte, error) {
		req := new(Req)
		if err := decodeMessage(c, decl.Request, body, req); err != nil {
			return nil, err
		}
		call.Request = req
		out, err := run(ctx, call)
		if err != nil {
			return nil, processedError(err)
		}
		return encodeResponse[Resp](out)
	}})
}

// HandleBatch registers the handler of a batch method. The body is
// {"items":[…]}; the handler is called once per item, in order, and each item
// gets its own result or coded error: {"results":[{"ok":…}|{"error":…}]}.
// An item that does not decode or validate gets invalid_argument without
// reaching the handler. Interceptors run once per item.
//
// For generated code: the typed servers lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
func HandleBatch[Req, Resp any](s *Server, c *Contract, method string, h func(context.Context, *Req) (*Resp, error)) {
	decl := mustMethod(c, method, true)
	run := s.callChain(func(ctx context.Context, call *Call) (any, error) {
		return h(context.WithValue(ctx, callKey{}, call), call.Request.(*Req))
	})
	maxItems := s.batchItems(c, method)
	s.register(c, method, &methodHandler{batch: true, invoke: run, serve: func(ctx context.Context, call *Call, body []byte) ([]byte, error) {
		return s.calls.Items(ctx, call.Header, body, maxItems, func(ctx context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error) {
			req := new(Req)
			if err := decodeMessage(c, decl.Request, raw, req); err != nil {
				return nil, err
			}
			itemCall := *call
			itemCall.Request, itemCall.Batch, itemCall.Item, itemCall.Header = req, true, i, h
			resp, err := run(ctx, &itemCall)
			if err != nil {
				return nil, processedError(err)
			}
			return encodeResponse[Resp](resp)
		})
	}})
}

// processedError is the error a caller sees once a handler has run. The
// codes handshake_required and incompatible_peer promise that a call was not
// processed, so the client may resend it; a handler or interceptor that
// returns one (passing on a downstream peer's error, say) must not make the
// caller resend a call it already handled, so it travels as unavailable.
func processedError(err error) error {
	switch CodeOf(err) {
	case CodeHandshakeRequired, CodeIncompatiblePeer:
		return NewError(CodeUnavailable, err)
	}
	return err
}

func mustMethod(c *Contract, method string, batch bool) methodDecl {
	decl, ok := c.Method(method)
	if !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no method %s", c.Name(), c.Version(), method))
	}
	if decl.Batch != batch {
		if batch {
			panic(fmt.Sprintf("lockstep: %s is not a batch method; use HandleUnary", method))
		}
		panic(fmt.Sprintf("lockstep: %s is a batch method; use HandleBatch", method))
	}
	return methodDecl{Request: decl.Request, Response: decl.Response}
}

type methodDecl struct{ Request, Response string }

// handlerOf returns the handler registered for a method of a contract
// version, or nil.
func (s *Server) handlerOf(c *Contract, method string) *methodHandler {
	sc := s.lookup(c.Name())
	if sc == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sv := sc.versions[c.Version()]; sv != nil {
		return sv.methods[method]
	}
	return nil
}

// encodeResponse checks a handler's (or interceptor's) answer and encodes
// it.
func encodeResponse[Resp any](out any) ([]byte, error) {
	resp, ok := out.(*Resp)
	if !ok || resp == nil {
		return nil, Errorf(CodeInternal, "handler returned no %T", resp)
	}
	b, err := marshal(resp)
	if err != nil {
		return nil, Errorf(CodeInternal, "response did not encode: %v", err)
	}
	return b, nil
}

// decodeMessage decodes and validates one message. Generated types that
// implement [Validator] validate themselves after decoding; anything else is
// validated as JSON against the contract's schema first.
func decodeMessage(c *Contract, message string, body []byte, v any) error {
	if val, ok := v.(Validator); ok {
		if err := unmarshal(body, v); err != nil {
			if CodeOf(err) == CodeInvalidArgument {
				return err
			}
			return Errorf(CodeInvalidArgument, "%s does not decode: %v", message, err)
		}
		if err := val.Validate(); err != nil {
			if CodeOf(err) == CodeInvalidArgument {
				return err
			}
			return Errorf(CodeInvalidArgument, "%s: %v", message, err)
		}
		return nil
	}
	return c.decodeValidated(message, body, v)
}

// unmarshal decodes body into v. A generated message type decodes itself
// strictly, rejecting malformed JSON and trailing data as encoding/json does
// (the generator's differential and fuzz tests check both paths accept the
// same inputs), so its UnmarshalJSON is called directly: json.Unmarshal would
// scan the whole input twice first, which costs more than the generated
// decoding and validation together.
func unmarshal(body []byte, v any) error {
	if u, ok := v.(json.Unmarshaler); ok {
		if _, generated := v.(Validator); generated {
			return u.UnmarshalJSON(body)
		}
	}
	return json.Unmarshal(body, v)
}

// MaxMultiCalls bounds the calls of one multi-call request; a client's
// AutoBatch.MaxCalls should not exceed it.
const MaxMultiCalls = dispatch.MaxCalls

// serveCall answers POST /lockstep/<contract>/<version>/<Method> and the
// multi-call endpoint: routing, admission (admit.Gate.Admit), the body (ReadBody),
// the call's deadline, the handler once per idempotency key (dispatch),
// and the answer.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	contract, ver, method := chi.URLParam(r, "contract"), chi.URLParam(r, "version"), chi.URLParam(r, "method")
	if method != protocol.MultiCallMethod {
		// Each call of a multi-call is observed on its own (serveMulti).
		var ow *admit.ObservedWriter
		w, ow = admit.ObserveAnswer(w, s.gate.ObserveCall(contract, ver, method))
		defer ow.End()
	}
	sv, mh, err := s.routeCall(contract, ver, method)
	if err != nil {
		s.refuse(w, r, s.routingRefusal(r, err))
		return
	}
	adm, err := s.gate.Admit(r, entry{Kind: EntryCall, Contract: contract, Version: ver, Call: true})
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	defer adm.Done()
	sess := adm.Sess
	body, release, ok := s.gate.ReadBody(w, r, adm)
	if !ok {
		return
	}
	ctx, cancel, err := dispatch.WithTimeout(adm.Ctx, r.Header.Get(protocol.HeaderTimeout))
	if err != nil {
		// A malformed timeout is the request's own error: a resend fails
		// the same way, so it is not marked not processed. It is read
		// after the body, so the answer leaves nothing unread.
		release()
		s.fail(w, err)
		return
	}
	defer cancel()
	var out []byte
	replayed := false
	if method == protocol.MultiCallMethod {
		out, err = s.serveMulti(ctx, sv, sess, r.Header, body)
	} else {
		out, replayed, err = s.dispatch(ctx, sess, &Call{Kind: EntryCall, Contract: contract, Version: ver, Method: method, Peer: sess.peer, Header: r.Header}, body, mh.serve)
	}
	if replayed {
		w.Header().Set(protocol.HeaderReplayed, "1")
	}
	release()
	s.answer(ctx, w, adm, out, err)
}

// routeCall finds what a call's path names: the served version and, but
// for a multi-call, the method's handler. Its refusal comes before
// admission (routingRefusal).
func (s *Server) routeCall(contract, ver, method string) (*servedVersion, *methodHandler, error) {
	sc := s.lookup(contract)
	if sc == nil {
		return nil, nil, Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, contract)
	}
	sv := sc.versions[ver]
	if sv == nil {
		return nil, nil, Errorf(CodeIncompatiblePeer, "%s does not speak %s %s: handshake again", s.cfg.Component, contract, ver)
	}
	mh := sv.methods[method]
	if mh == nil && method != protocol.MultiCallMethod {
		return nil, nil, Errorf(CodeNotFound, "%s %s has no method %q", contract, ver, method)
	}
	return sv, mh, nil
}

// answer writes the outcome of an admitted call whose handler ran (or may
// have run): out, or err as handlerError makes it. A call in a session
// renews it, is told when the server drains (and the session marked told)
// and when its client should resync; a plain call is told the server
// drains when it was draining as the call arrived.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, a *admitted, out []byte, err error) {
	draining := a.Draining
	if sess := a.Sess; sess != nil {
		sess.lastSeen.Store(s.now())
		if draining = s.Draining(); draining {
			sess.drainNotified.Store(true)
		}
	}
	if err != nil {
		s.fail(w, handlerError(ctx, err))
		return
	}
	if draining {
		markDraining(w)
	}
	if a.Sess != nil && a.Sess.resync.Swap(false) {
		w.Header().Set(protocol.HeaderResync, "1")
	}
	writeJSON(w, http.StatusOK, out)
}

// handlerError is what a handler's error is answered with: an uncoded
// failure (internal) of a handler whose context ended is the deadline's
// doing, and is answered deadline_exceeded, which the caller can act on.
// Every call is answered through it: a call alone, each call of a
// multi-call, a plain call.
func handlerError(ctx context.Context, err error) error {
	if ctx.Err() != nil && CodeOf(err) == CodeInternal {
		return NewError(CodeDeadlineExceeded, ctx.Err())
	}
	return err
}

// serveMulti runs the calls of a multi-call concurrently, each through its
// method's handler and the interceptors as if it had come alone, observed
// and answered (handlerError) one by one (see [dispatch.Multi]).
func (s *Server) serveMulti(ctx context.Context, sv *servedVersion, sess *session, header http.Header, body []byte) ([]byte, error) {
	contract, ver := sv.contract.Name(), sv.contract.Version()
	return dispatch.Multi[*methodHandler]{Server: s.calls, Contract: contract, Version: ver, Header: header,
		InFlight: &sess.inFlight, Usage: sess.usage,
		Method: func(name string) (*methodHandler, bool) {
			mh := sv.methods[name]
			return mh, mh != nil && !mh.batch
		},
		Call: func(ctx context.Context, mh *methodHandler, method string, h http.Header, body []byte) ([]byte, bool, error) {
			observed := s.gate.ObserveCall(contract, ver, method)
			out, replayed, err := s.dispatch(ctx, sess, &Call{Kind: EntryCall, Contract: contract, Version: ver,
				Method: method, Peer: sess.peer, Header: h}, body, mh.serve)
			observed.End(CodeOf(err))
			return out, replayed, handlerError(ctx, err)
		},
	}.Serve(ctx, body)
}

// replayKeyOf names the record of a call with key in sess.
func replayKeyOf(sess *session, key string) replay.Key {
	return replay.Key{Contract: sess.contract, Peer: sess.usage.Key, Instance: sess.peer.Instance, Key: key}
}

// dispatch serves one call of sess through serve, once per idempotency
// key: a call that carries Lockstep-Idempotency-Key is recorded under its
// peer and instance (replayKeyOf), and a replay of it is answered from the
// record (replayed is true) without running serve again; see
// [dispatch.Server.Once]. Calls without a key are served as they are.
func (s *Server) dispatch(ctx context.Context, sess *session, call *Call, body []byte, serve func(context.Context, *Call, []byte) ([]byte, error)) (out []byte, replayed bool, err error) {
	key := call.Header.Get(protocol.HeaderIdempotencyKey)
	if key == "" {
		out, err = serve(ctx, call, body)
		return out, false, err
	}
	return s.calls.Once(ctx, replayKeyOf(sess, key), call.Method, body, func(ctx context.Context) ([]byte, error) {
		return serve(ctx, call, body)
	})
}

// replayLimits are the bounds of the idempotency records
// (replay.Limits), as the limits' counters name them.
var replayLimits = []limit{limit(replay.LimitKeysPerPeer), limit(replay.LimitBytesPerPeer), limit(replay.LimitBytes)}

// Plain serving: one contract version served to callers that do not
// handshake, such as a Kubernetes kube-scheduler calling a scheduler
// extender. Such a caller cannot take part in version negotiation, so the
// server's operator pins the version for it, as a client pins an external
// peer ([PinnedPeer]): the plain paths are that version's declared paths,
// and the calls reach the very handlers (interceptors, fork conversions
// and validation included) that the version's sessions reach.

// ServePlain serves contract version c to callers that do not handshake:
// every method of c that declares a path is served at prefix + path
// (prefix is a Kubernetes scheduler configuration's urlPrefix path, "" for
// none), POST only. A request is decoded and validated exactly as a call
// in a session is (the version's generated decoding, case-insensitive
// where the contract says so, and its schemas), runs the server's
// interceptors and the handler registered for the method, and is answered
// with the method's response as JSON, or with lockstep's error shape and
// its code's HTTP status.
//
// Call it after registering c's handlers ([HandleUnary], [ForkUnary],
// generated Register functions). It panics on setup mistakes: c not
// served, a method with a path but no handler, a contract without paths,
// unary methods only, once the server has started.
//
// A plain call has no session: handlers see a [Call] without a peer, and
// [PlainRequest] returns its HTTP request. It is served while the server
// drains (its caller has no other replica to be sent to) and counted in
// the drain's calls in flight.
func (s *Server) ServePlain(c *Contract, prefix string) {
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		prefix = ""
	}
	served := 0
	for _, method := range c.Methods() {
		decl, _ := c.Method(method)
		if decl.Path == "" {
			continue
		}
		if decl.Batch {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s is a batch method; plain callers make unary calls", c.Name(), c.Version(), method))
		}
		mh := s.handlerOf(c, method)
		if mh == nil || s.lookup(c.Name()).versions[c.Version()].contract.Fingerprint() != c.Fingerprint() {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s has no handler; register the version's handlers first", c.Name(), c.Version(), method))
		}
		path := prefix + "/" + strings.TrimPrefix(decl.Path, "/")
		s.route(path, s.plainHandler(c, method, mh), false)
		served++
	}
	if served == 0 {
		panic(fmt.Sprintf("lockstep: plain serving: %s %s declares no method paths", c.Name(), c.Version()))
	}
}

type plainKey struct{}

// PlainRequest returns the HTTP request of a call served to a caller that
// does not handshake ([Server.ServePlain]), or nil for a call in a session.
func PlainRequest(ctx context.Context) *http.Request {
	r, _ := ctx.Value(plainKey{}).(*http.Request)
	return r
}

// plainHandler serves one method of c to plain callers, through the
// same admission (admit, EntryPlain), body reading and answer as a call
// in a session.
func (s *Server) plainHandler(c *Contract, method string, mh *methodHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, ow := admit.ObserveAnswer(w, s.gate.ObserveCall(c.Name(), c.Version(), method))
		defer ow.End()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.refuse(w, r, s.routingRefusal(r, Errorf(CodeNotFound, "%s is not served at %s: POST only", r.Method, r.URL.Path)))
			return
		}
		adm, err := s.gate.Admit(r, entry{Kind: EntryPlain, Contract: c.Name(), Version: c.Version()})
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		defer adm.Done()
		body, release, ok := s.gate.ReadBody(w, r, adm)
		if !ok {
			return
		}
		defer release()
		ctx := context.WithValue(adm.Ctx, plainKey{}, r.WithContext(adm.Ctx))
		out, err := mh.serve(ctx, &Call{Kind: EntryPlain, Contract: c.Name(), Version: c.Version(), Method: method, Header: r.Header}, body)
		s.answer(ctx, w, adm, out, err)
	})
}

// encodeBufs holds scratch buffers for marshal, so that a message is
// encoded without growing a fresh slice member by member.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBuf bounds the buffers returned to the pool, so that one huge
// message does not pin its buffer for the life of the process.
const maxPooledBuf = 64 << 10

// marshal encodes a message: with its generated encoder ([jsonwire.Appender])
// when it has one, into a pooled scratch buffer, returning a copy of exactly
// the encoded length (the one allocation json.Marshal also makes); otherwise with
// json.Marshal. Requests, answers and topic objects all go through it.
func marshal(v any) ([]byte, error) {
	a, ok := v.(jsonwire.Appender)
	if !ok {
		return json.Marshal(v)
	}
	bp := encodeBufs.Get().(*[]byte)
	b, err := a.AppendJSON((*bp)[:0])
	var out []byte
	if err == nil {
		out = make([]byte, len(b))
		copy(out, b)
	}
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		encodeBufs.Put(bp)
	}
	return out, err
}
