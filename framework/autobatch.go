package framework

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/autobatch"
	"github.com/lockstep-dev/lockstep/framework/internal/resend"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// AutoBatch shapes automatic batching, which clients do by default:
// concurrent unary calls to the same endpoint travel together as one
// multi-call request, and each caller gets its own answer or error. Batches
// form opportunistically, with no delay: a call goes out at once, alone,
// while fewer than MaxInFlight requests are under way to its endpoint, so a
// lone caller's call is sent exactly as without batching; only calls that
// find every slot busy wait, and leave together in one request when a slot
// frees. Under load that caps the connections and requests per endpoint and
// shares their costs (system calls, headers, HTTP parsing) among the calls.
// A request under way longer than StallAfter stops holding its slot, so a
// slow handler delays the calls behind it by at most that long.
// With MaxDelay set, a call also waits up to that long for companions.
type AutoBatch struct {
	// Disabled turns automatic batching off: every call travels in a
	// request of its own, on as many connections as there are concurrent
	// calls.
	Disabled bool
	// MaxCalls bounds the calls in one request; default 64, at most
	// [MaxMultiCalls].
	MaxCalls int
	// MaxInFlight bounds the requests under way per endpoint; default 4.
	MaxInFlight int
	// StallAfter is how long a request holds its slot at most; default
	// 20ms.
	StallAfter time.Duration
	// MaxDelay, if set, lets a call wait that long for companions even when
	// a request could go out at once.
	MaxDelay time.Duration
}

// batcher merges the calls of one session at one endpoint
// (autobatch.Batcher), sending them as this endpoint's calls and
// multi-calls.
type batcher struct {
	sess *clientSession
	*autobatch.Batcher[resend.Attempt]
}

// batchCall is a call waiting in a batcher.
type batchCall = autobatch.Call[resend.Attempt]

// batcherFor returns the batcher of sess, creating it on first use.
func (e *endpoint) batcherFor(sess *clientSession) *batcher {
	e.batchMu.Lock()
	defer e.batchMu.Unlock()
	if e.batch == nil || e.batch.sess != sess {
		var a AutoBatch // a nil ClientConfig.AutoBatch batches at the defaults
		if e.c.cfg.AutoBatch != nil {
			a = *e.c.cfg.AutoBatch
		}
		cfg := autobatch.Config{MaxCalls: a.MaxCalls, MaxInFlight: a.MaxInFlight, StallAfter: a.StallAfter, MaxDelay: a.MaxDelay}.WithDefaults(MaxMultiCalls)
		e.batch = &batcher{sess: sess, Batcher: autobatch.New(cfg, e.c.cfg.Clock, autobatch.Send[resend.Attempt]{
			One: func(ctx context.Context, method string, body []byte, header http.Header) resend.Attempt {
				return e.send(ctx, sess, resend.Request{Method: http.MethodPost, URL: e.callURL(sess, method), Body: body, Header: header})
			},
			Many:  func(ctx context.Context, calls []*batchCall) { e.sendMulti(ctx, sess, calls) },
			Ended: func(err error) resend.Attempt { return resend.Attempt{Transport: resend.TransportAmbiguous, Err: err} },
		})}
	}
	return e.batch
}

// do sends a call through the batcher and waits for its own outcome.
func (b *batcher) do(ctx context.Context, method string, body []byte, header http.Header) resend.Attempt {
	return b.Do(ctx, method, body, header)
}

// sendMulti sends calls as one multi-call request on ctx and hands each
// its own outcome: the whole request's when it failed, else its result.
func (e *endpoint) sendMulti(ctx context.Context, sess *clientSession, live []*batchCall) {
	parts, n := encodeMulti(live)
	whole := e.send(autobatch.WithCalls(ctx, live), sess, resend.Request{Method: http.MethodPost, URL: e.callURL(sess, protocol.MultiCallMethod), Parts: parts, PartsLen: n})
	if whole.Transport != resend.TransportOK || whole.Status != http.StatusOK {
		for _, p := range live {
			p.Deliver(whole)
		}
		return
	}
	br, err := wire.DecodeMultiResponse(whole.Body)
	if err != nil || len(br.Results) != len(live) {
		bad := resend.Attempt{Status: http.StatusInternalServerError,
			Body: mustJSON(toWire(Errorf(CodeInternal, "multi-call answer does not decode")))}
		for _, p := range live {
			p.Deliver(bad)
		}
		return
	}
	for i, p := range live {
		r := br.Results[i]
		a := resend.Attempt{Draining: whole.Draining}
		switch {
		case r.Error != nil:
			// An item's own error says nothing of whether it was
			// processed: only the request as a whole can be refused
			// unprocessed.
			a.Status = r.Error.ToError().Code().HTTPStatus()
			a.Body = mustJSON(r.Error)
		default:
			a.Status, a.Body = http.StatusOK, r.OK
		}
		p.Deliver(a)
	}
}

// encodeMulti writes the multi-call body around the already encoded
// requests, which it does not copy: the body is sent in parts
// (wire.MultiCallBody).
func encodeMulti(calls []*batchCall) (net.Buffers, int) {
	body := wire.NewMultiCallBody(len(calls))
	for _, p := range calls {
		var timeout string
		if dl, ok := p.Ctx.Deadline(); ok {
			timeout = encodeTimeout(time.Until(dl))
		}
		var h map[string]string
		if len(p.Header) > 0 {
			h = make(map[string]string, len(p.Header))
			for k := range p.Header {
				h[k] = p.Header.Get(k)
			}
		}
		body.Add(p.Method, timeout, h, p.Body)
	}
	return body.Parts()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"code":"internal","message":"did not encode"}`)
	}
	return b
}

// MultiCallItemHeaders returns, for a multi-call request this package's
// client sent, the value of the header name in each call it carries, in
// order ("" for a call without it); for any other request, nil. A
// transport that follows calls into multi-calls (an upgrade test kit
// tagging each call with an id, say) reads them here, from the request's
// context, rather than decoding the body again with a copy of the
// multi-call's wire form, which stays in framework/internal/wire.
func MultiCallItemHeaders(req *http.Request, name string) []string {
	return autobatch.ItemHeaders(req.Context(), name)
}
