package dispatch

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// MaxCalls bounds the calls of one multi-call request
// (framework.MaxMultiCalls).
const MaxCalls = 256

// workers bounds the goroutines one multi-call runs its calls on.
const workers = 32

// Multi is one multi-call request of a session, as the server admitted it:
// unary calls of one contract version. M is the server's record of a
// method's handler.
type Multi[M any] struct {
	*Server
	// Contract and Version name the version the calls travel at; Header
	// is the request's headers.
	Contract, Version string
	Header            http.Header
	// InFlight counts the session's calls in flight and Usage is its
	// peer's record of limits: each call of the multi-call counts in both
	// as it would alone.
	InFlight *atomic.Int64
	Usage    *limits.Usage
	// Method returns the handler of a unary method of the version, and
	// false when the version has none of that name.
	Method func(name string) (M, bool)
	// Call serves one call through its method's handler m, with its own
	// headers h and deadline (ctx), and returns its answer, whether it was
	// replayed, and its error as the caller is to see it.
	Call func(ctx context.Context, m M, name string, h http.Header, body []byte) (out []byte, replayed bool, err error)
}

// Serve runs the calls of a multi-call's body, {"calls":[…]},
// concurrently, each through Call as if it had come alone, and answers
// {"results":[…]} in order.
func (m Multi[M]) Serve(ctx context.Context, body []byte) ([]byte, error) {
	in, err := wire.DecodeMultiRequest(body)
	if err != nil {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "multi-call body must be {\"calls\":[…]}: %v", err)
	}
	if len(in.Calls) > MaxCalls {
		return nil, limits.Refuse(m.Refused, limits.MultiCalls, apierror.CodeInvalidArgument, "a multi-call carries at most %d calls, not %d", MaxCalls, len(in.Calls))
	}
	end, err := m.countCalls(int64(len(in.Calls) - 1))
	if err != nil {
		return nil, err
	}
	defer end()
	out := wire.BatchResponse{Results: make([]wire.Result, len(in.Calls))}
	runBounded(len(in.Calls), workers, func(i int) { out.Results[i] = m.serveCall(ctx, in.Calls[i]) })
	size := len(`{"results":[]}`)
	for _, r := range out.Results {
		size += len(`{"ok":},`) + len(r.OK)
	}
	return wire.AppendMultiResponse(make([]byte, 0, size), out)
}

// countCalls counts extra calls against the session's and the peer's
// in-flight limits, as they would count alone (the request itself was
// counted once already), and returns what uncounts them.
func (m Multi[M]) countCalls(extra int64) (end func(), err error) {
	if extra <= 0 {
		return func() {}, nil
	}
	if n := m.InFlight.Add(extra); n > int64(m.MaxInFlight) {
		m.InFlight.Add(-extra)
		return nil, limits.Refuse(m.Refused, limits.InFlightPerSession, apierror.CodeResourceExhausted, "session would have %d calls in flight, the limit is %d", n, m.MaxInFlight)
	}
	endPeer, err := m.Peers.BeginCall(m.Usage, extra)
	if err != nil {
		m.InFlight.Add(-extra)
		return nil, err
	}
	return func() {
		endPeer()
		m.InFlight.Add(-extra)
	}, nil
}

// serveCall serves one call of the multi-call and returns its result.
func (m Multi[M]) serveCall(ctx context.Context, mc wire.MultiCall) (res wire.Result) {
	defer func() {
		// net/http recovers a handler's panic and ends only the
		// request; the calls of a multi-call run on goroutines of
		// their own, where it would end the process. The call that
		// panicked is answered internal, the others as usual.
		if p := recover(); p != nil {
			m.Logger.Error("lockstep: a call of a multi-call panicked", "contract", m.Contract,
				"version", m.Version, "method", mc.Method, "panic", p, "stack", string(debug.Stack()))
			res = wire.ErrorResult(apierror.Errorf(apierror.CodeInternal, "%s failed", mc.Method))
		}
	}()
	mh, ok := m.Method(mc.Method)
	if !ok {
		return wire.ErrorResult(apierror.Errorf(apierror.CodeNotFound, "%s %s has no unary method %q", m.Contract, m.Version, mc.Method))
	}
	cctx, cancel, err := WithTimeout(ctx, mc.Timeout)
	if err != nil {
		return wire.ErrorResult(err)
	}
	defer cancel()
	b, replayed, err := m.Call(cctx, mh, mc.Method, withOwn(m.Header, mc.Header), mc.Request)
	if err != nil {
		res = wire.ErrorResult(err)
	} else {
		res = wire.Result{OK: b}
	}
	res.Replayed = replayed
	return res
}

// runBounded runs fn(0) … fn(n-1) on at most workers goroutines, the
// caller's among them, and waits for them: the calls of a multi-call came
// from concurrent callers, but one request must not start unbounded
// goroutines. Each worker takes the next index left until none is, so
// quick calls run one after the other on whichever worker is running,
// instead of being handed to the workers one by one through a channel (a
// park and a wake-up each, on the scheduler's queue beside every other
// goroutine).
//
// A call that blocks holds up only its own worker: before a worker runs a
// call while indices are left, it makes sure a helper is on its way to
// take them, starting one unless one started already and has not taken an
// index yet. So quick calls are served by the caller with at most a helper
// or two started per request, where a helper per index (up to workers)
// was started before, most finding nothing left to do; and a call that
// blocks has a helper behind it that takes the next index, and starts the
// next helper in its turn.
func runBounded(n, workers int, fn func(i int)) {
	var (
		next    atomic.Int64
		helpers int         // helpers started; read and written holding pending
		pending atomic.Bool // a helper started and has not taken an index
		wg      sync.WaitGroup
		work    func()
	)
	work = func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if i+1 < n && pending.CompareAndSwap(false, true) {
				if helpers < workers-1 {
					helpers++
					wg.Add(1)
					go func() {
						defer wg.Done()
						pending.Store(false)
						work()
					}()
				} else {
					pending.Store(false)
				}
			}
			fn(i)
		}
	}
	work()
	wg.Wait()
}
