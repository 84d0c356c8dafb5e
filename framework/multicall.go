package framework

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// The multi-call envelopes, {"calls":[…]} and {"results":[…]}, travel with
// every automatically batched call. encoding/json decodes them in two
// passes over the whole body (it validates it, then decodes, scanning each
// request again to keep it raw and copying it), which cost more than
// decoding the requests themselves. The functions here split an envelope
// in one pass, validating every value they keep raw, and fall back to
// encoding/json for anything outside the plain shape the client writes (an
// escape in a name or string, an unknown or repeated member, very deep
// nesting), so that what they accept decodes exactly as encoding/json
// decodes it, and what they do not is decoded, or refused with its words,
// by encoding/json itself. multicall_test.go compares the two.

// decodeMultiRequest decodes a multi-call body. The requests it returns are
// slices of body.
func decodeMultiRequest(body []byte) (multiRequest, error) {
	if in, ok := splitMultiRequest(body); ok {
		return in, nil
	}
	var in multiRequest
	err := json.Unmarshal(body, &in)
	return in, err
}

// decodeMultiResponse decodes a multi-call answer. The answers it returns
// are slices of body.
func decodeMultiResponse(body []byte) (batchResponse, error) {
	if out, ok := splitMultiResponse(body); ok {
		return out, nil
	}
	var out batchResponse
	err := json.Unmarshal(body, &out)
	return out, err
}

// appendMultiResponse encodes a multi-call answer: each result's answer as
// it is (the handler's encoder wrote it, so it is valid JSON), its error
// with encoding/json.
func appendMultiResponse(b []byte, out batchResponse) ([]byte, error) {
	b = append(b, `{"results":[`...)
	for i, r := range out.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		sep := false
		if len(r.OK) > 0 {
			b = append(append(b, `"ok":`...), r.OK...)
			sep = true
		}
		if r.Error != nil {
			e, err := json.Marshal(r.Error)
			if err != nil {
				return nil, err
			}
			if sep {
				b = append(b, ',')
			}
			b = append(append(b, `"error":`...), e...)
			sep = true
		}
		if r.Replayed {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"replayed":true`...)
		}
		b = append(b, '}')
	}
	return append(b, `]}`...), nil
}

// The envelopes are read with jsonwire's decoder, the one JSON scanner of
// the runtime and of generated code. A member this reader does not expect
// (an unknown, repeated or null one, or a name encoding/json would match
// only case-insensitively) and any syntax error mean "not the plain
// shape": the caller falls back to encoding/json.

// splitMultiRequest is decodeMultiRequest's one pass; false means "decode
// with encoding/json".
func splitMultiRequest(body []byte) (multiRequest, bool) {
	d := jsonwire.NewDecoder(body)
	var in multiRequest
	if d.ObjectStart() != nil {
		return multiRequest{}, false
	}
	seenCalls := false
	for d.NextMember() {
		if string(d.Key()) != "calls" || seenCalls {
			return multiRequest{}, false
		}
		seenCalls = true
		if d.Null() {
			continue // as encoding/json: calls stays nil
		}
		calls, ok := readMultiCalls(&d)
		if !ok {
			return multiRequest{}, false
		}
		in.Calls = calls
	}
	if d.End() != nil {
		return multiRequest{}, false
	}
	return in, true
}

// readMultiCalls reads the array of a multi-call request's calls; "[]"
// is an empty slice, as encoding/json decodes it.
func readMultiCalls(d *jsonwire.Decoder) ([]multiCall, bool) {
	if d.ArrayStart() != nil {
		return nil, false
	}
	calls := []multiCall{}
	for d.NextItem() {
		mc, ok := readMultiCall(d)
		if !ok {
			return nil, false
		}
		calls = append(calls, mc)
	}
	return calls, d.Err() == nil
}

// readMultiCall reads one call: {"method","request","timeout","header"}.
func readMultiCall(d *jsonwire.Decoder) (multiCall, bool) {
	var mc multiCall
	if d.ObjectStart() != nil {
		return mc, false
	}
	var seen [4]bool // method, request, timeout, header
	for d.NextMember() {
		var n int
		switch string(d.Key()) {
		case "method":
			n = 0
		case "request":
			n = 1
		case "timeout":
			n = 2
		case "header":
			n = 3
		default:
			return mc, false
		}
		if seen[n] {
			return mc, false
		}
		seen[n] = true
		var err error
		switch n {
		case 0:
			mc.Method, err = readString(d)
		case 1:
			mc.Request, err = d.RawBytes()
		case 2:
			mc.Timeout, err = readString(d)
		case 3:
			mc.Header, err = readHeader(d)
		}
		if err != nil {
			return mc, false
		}
	}
	return mc, d.Err() == nil
}

// errNotPlain is what the envelope readers return for a value they leave
// to encoding/json.
var errNotPlain = errors.New("not a plain envelope")

// readString reads a string and copies it: the decoder's own strings
// would copy the whole envelope, requests included, to share it.
func readString(d *jsonwire.Decoder) (string, error) {
	b, err := d.StringBytes()
	return string(b), err
}

// readHeader reads a call's header object; null and repeated names are
// left to encoding/json.
func readHeader(d *jsonwire.Decoder) (map[string]string, error) {
	if d.Peek() == jsonwire.KindNull {
		return nil, errNotPlain
	}
	if err := d.ObjectStart(); err != nil {
		return nil, err
	}
	h := map[string]string{}
	for d.NextMember() {
		k := string(d.Key())
		v, err := readString(d)
		if err != nil {
			return nil, err
		}
		if _, dup := h[k]; dup {
			return nil, errNotPlain
		}
		h[k] = v
	}
	return h, d.Err()
}

// splitMultiResponse is decodeMultiResponse's one pass for answers whose
// results all succeeded; false means "decode with encoding/json".
func splitMultiResponse(body []byte) (batchResponse, bool) {
	d := jsonwire.NewDecoder(body)
	if d.ObjectStart() != nil {
		return batchResponse{}, false
	}
	var out batchResponse
	seenResults := false
	for d.NextMember() {
		if string(d.Key()) != "results" || seenResults || d.ArrayStart() != nil {
			return batchResponse{}, false
		}
		seenResults = true
		out.Results = []batchResult{}
		for d.NextItem() {
			r, ok := readBatchResult(&d)
			if !ok {
				return batchResponse{}, false
			}
			out.Results = append(out.Results, r)
		}
	}
	if d.End() != nil || !seenResults {
		return batchResponse{}, false
	}
	return out, true
}

// readBatchResult reads one successful result: {"ok","replayed"}.
func readBatchResult(d *jsonwire.Decoder) (batchResult, bool) {
	var r batchResult
	if d.ObjectStart() != nil {
		return r, false
	}
	var seenOK, seenReplayed bool
	for d.NextMember() {
		var err error
		switch k := string(d.Key()); {
		case k == "ok" && !seenOK && d.Peek() != jsonwire.KindNull:
			seenOK = true
			r.OK, err = d.RawBytes()
		case k == "replayed" && !seenReplayed:
			seenReplayed = true
			r.Replayed, err = d.Bool()
		default:
			return r, false
		}
		if err != nil {
			return r, false
		}
	}
	return r, d.Err() == nil
}

// appendMultiCall appends one call of a multi-call request.
func appendMultiCall(b []byte, method, timeout string, header map[string]string, request []byte) []byte {
	b = append(b, `{"method":`...)
	b = strconv.AppendQuote(b, method)
	if timeout != "" {
		b = append(append(append(b, `,"timeout":"`...), timeout...), '"')
	}
	if len(header) > 0 {
		b = append(append(b, `,"header":`...), mustJSON(header)...)
	}
	b = append(append(b, `,"request":`...), request...)
	return append(b, '}')
}

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
