package autobatch

import "context"

// callsKey keys, in the context of a multi-call request the client sends,
// the calls it carries.
type callsKey struct{}

// WithCalls returns ctx carrying calls, the calls of the multi-call
// request sent with it, in order.
func WithCalls[R any](ctx context.Context, calls []*Call[R]) context.Context {
	return context.WithValue(ctx, callsKey{}, calls)
}

// ItemHeaders returns the value of the header name in each call ctx
// carries ([WithCalls]), in order ("" for a call without it); nil when
// ctx carries no calls of outcome type R.
func ItemHeaders[R any](ctx context.Context, name string) []string {
	calls, _ := ctx.Value(callsKey{}).([]*Call[R])
	if calls == nil {
		return nil
	}
	values := make([]string, len(calls))
	for i, p := range calls {
		values[i] = p.Header.Get(name)
	}
	return values
}
