package autobatch

import (
	"context"
	"net/http"
)

// headersKey keys, in the context of a multi-call request the client
// sends, the headers of the calls it carries.
type headersKey struct{}

// WithCalls returns ctx carrying the headers of calls, the calls of the
// multi-call request sent with it, in order. It keeps their headers, not
// the calls, which their callers reuse once answered.
func WithCalls[R any](ctx context.Context, calls []*Call[R]) context.Context {
	headers := make([]http.Header, len(calls))
	for i, c := range calls {
		headers[i] = c.Header
	}
	return context.WithValue(ctx, headersKey{}, headers)
}

// ItemHeaders returns the value of the header name in each call ctx
// carries ([WithCalls]), in order ("" for a call without it); nil when
// ctx carries no calls.
func ItemHeaders(ctx context.Context, name string) []string {
	headers, _ := ctx.Value(headersKey{}).([]http.Header)
	if headers == nil {
		return nil
	}
	values := make([]string, len(headers))
	for i, h := range headers {
		values[i] = h.Get(name)
	}
	return values
}
