package framework

import (
	"context"
	"net/http"
)

// multiCallItemsKey keys, in the context of a multi-call request the
// client sends, the calls it carries (see [MultiCallItemHeaders]).
type multiCallItemsKey struct{}

// withMultiCallItems returns ctx carrying calls, the calls of the
// multi-call request sent with it, in order.
func withMultiCallItems(ctx context.Context, calls []*pendingCall) context.Context {
	return context.WithValue(ctx, multiCallItemsKey{}, calls)
}

// MultiCallItemHeaders returns, for a multi-call request this package's
// client sent, the value of the header name in each call it carries, in
// order ("" for a call without it); for any other request, nil. A
// transport that follows calls into multi-calls (an upgrade test kit
// tagging each call with an id, say) reads them here, from the request's
// context, rather than decoding the body again with a copy of the
// multi-call's wire form, which stays in this file.
func MultiCallItemHeaders(req *http.Request, name string) []string {
	calls, _ := req.Context().Value(multiCallItemsKey{}).([]*pendingCall)
	if calls == nil {
		return nil
	}
	values := make([]string, len(calls))
	for i, p := range calls {
		values[i] = p.header.Get(name)
	}
	return values
}
