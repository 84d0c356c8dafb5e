package dispatch

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Server is what dispatching reads of the server, built once with it.
type Server struct {
	// Replays records keyed calls' answers; Now is the server's clock.
	Replays *replay.Store
	Now     func() time.Time
	// Refused counts an entry refused for going over a limit
	// (limits.Refuse).
	Refused limits.Counter
	// Peers counts every peer's calls in flight; MaxInFlight bounds one
	// session's (ServerConfig.MaxInFlightPerSession).
	Peers       *limits.Peers
	MaxInFlight int
	// Logger receives the panic of a multi-call's call.
	Logger *slog.Logger
}

// Once serves a call with idempotency key k through serve, once per key:
// the call is recorded under k, and a replay of it is answered from the
// record (replayed is true) without running serve again; a replay that
// arrives while the first still runs waits for its answer, or until ctx
// ends. The first call's serve runs on a context that keeps ctx's
// deadline but not its cancellation (detached), so a connection cut after
// the call arrived does not stop it halfway: its answer is recorded for
// the resend. method and body identify the request, so that a key reused
// for another one is refused (replay.RequestDigest).
func (d *Server) Once(ctx context.Context, k replay.Key, method string, body []byte,
	serve func(context.Context) ([]byte, error)) (out []byte, replayed bool, err error) {
	rec, first, err := d.Replays.Begin(k, replay.RequestDigest(method, body), d.Now())
	if err != nil {
		return nil, false, err
	}
	if first {
		hctx, cancel := detached(ctx)
		defer cancel()
		err = apierror.Errorf(apierror.CodeInternal, "the handler of %s did not return", method)
		defer func() { d.Replays.Finish(k, rec, replay.Answer{Out: out, Err: err}) }()
		out, err = serve(hctx)
		return out, false, err
	}
	select {
	case <-rec.Done():
	case <-ctx.Done():
		return nil, false, apierror.NewError(apierror.CodeDeadlineExceeded, ctx.Err())
	}
	a := rec.Answer()
	return a.Out, true, a.Err
}

// detached returns a context with ctx's values and deadline, but not its
// cancellation.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

// WithTimeout applies a Lockstep-Timeout value (a call's header, or a
// multi-call's call's own) to ctx; "" leaves it as it is.
func WithTimeout(ctx context.Context, value string) (context.Context, context.CancelFunc, error) {
	if value == "" {
		return ctx, func() {}, nil
	}
	d, err := wire.DecodeTimeout(value)
	if err != nil {
		return nil, nil, apierror.Errorf(apierror.CodeInvalidArgument, "%s: %v", protocol.HeaderTimeout, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// withOwn returns header with own's names set, a copy when own has any:
// the headers of a batch item or a multi-call's call that carries its own.
func withOwn(header http.Header, own map[string]string) http.Header {
	if len(own) == 0 {
		return header
	}
	h := header.Clone()
	for k, v := range own {
		h.Set(k, v)
	}
	return h
}
