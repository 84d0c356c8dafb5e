package dispatch

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
)

// Item serves item i of a batch call, raw, with its headers h (the call's,
// with the item's own added), and returns its encoded answer.
type Item func(ctx context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error)

// Items decodes the body of a batch call, {"items":[…]} of at most
// maxItems items (the method's bound), serves each item in order through
// item with its headers (header, with the item's own added when the body
// has "headers"), and encodes {"results":[…]}: each item gets its own
// result or coded error. Items left when ctx ends get its error unserved.
func (d *Server) Items(ctx context.Context, header http.Header, body []byte, maxItems int, item Item) ([]byte, error) {
	var in wire.BatchRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "batch body must be {\"items\":[…]}: %v", err)
	}
	if in.Items == nil {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "batch body must be {\"items\":[…]}: items is missing")
	}
	if len(in.Items) > maxItems {
		return nil, limits.Refuse(d.Refused, limits.BatchItems, apierror.CodeInvalidArgument, "a batch call carries at most %d items, not %d", maxItems, len(in.Items))
	}
	if in.Headers != nil && len(in.Headers) != len(in.Items) {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "a batch call's headers are one per item: %d for %d items", len(in.Headers), len(in.Items))
	}
	out := wire.BatchResponse{Results: make([]wire.Result, len(in.Items))}
	for i, raw := range in.Items {
		if err := ctx.Err(); err != nil {
			out.Results[i] = wire.ErrorResult(err)
			continue
		}
		h := header
		if in.Headers != nil {
			h = withOwn(header, in.Headers[i])
		}
		b, err := item(ctx, i, raw, h)
		if err != nil {
			out.Results[i] = wire.ErrorResult(err)
			continue
		}
		out.Results[i] = wire.Result{OK: b}
	}
	return json.Marshal(out)
}
