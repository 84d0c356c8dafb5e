package wire

import (
	"encoding/json"
	"errors"
	"net"
	"strconv"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// BatchRequest is a batch call's body: its items and, optionally, one
// header object (or null) per item, which older servers ignore.
type BatchRequest struct {
	Items   []json.RawMessage   `json:"items"`
	Headers []map[string]string `json:"headers"`
}

// BatchResponse is the answer of a batch call and of a multi-call:
// one result per item or call, in order.
type BatchResponse struct {
	Results []Result `json:"results"`
}

// Result is one item's or call's answer: its encoded answer or its
// error.
type Result struct {
	OK    json.RawMessage `json:"ok,omitempty"`
	Error *apierror.Wire  `json:"error,omitempty"`
	// Replayed marks a multi-call item answered from the record of its
	// idempotency key, as Lockstep-Replayed does a call's answer.
	Replayed bool `json:"replayed,omitempty"`
}

// ErrorResult is the result of an item or call that failed with err.
func ErrorResult(err error) Result {
	w := apierror.ToWire(apierror.As(err))
	return Result{Error: &w}
}

// MultiRequest is the body of a multi-call: unary calls of one session.
type MultiRequest struct {
	Calls []MultiCall `json:"calls"`
}

// MultiCall is one call of a multi-call.
type MultiCall struct {
	// Method is a unary method of the contract version.
	Method string `json:"method"`
	// Request is the call's request message.
	Request json.RawMessage `json:"request"`
	// Timeout is the call's own Lockstep-Timeout, if it has a deadline.
	Timeout string `json:"timeout,omitempty"`
	// Header holds the call's own headers (traceparent and the like),
	// added to the request's for this call only.
	Header map[string]string `json:"header,omitempty"`
}

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

// DecodeMultiRequest decodes a multi-call body. The requests it returns are
// slices of body.
func DecodeMultiRequest(body []byte) (MultiRequest, error) {
	if in, ok := splitMultiRequest(body); ok {
		return in, nil
	}
	var in MultiRequest
	err := json.Unmarshal(body, &in)
	return in, err
}

// DecodeMultiResponse decodes a multi-call answer. The answers it returns
// are slices of body.
func DecodeMultiResponse(body []byte) (BatchResponse, error) {
	if out, ok := splitMultiResponse(body); ok {
		return out, nil
	}
	var out BatchResponse
	err := json.Unmarshal(body, &out)
	return out, err
}

// AppendMultiResponse encodes a multi-call answer: each result's answer as
// it is (the handler's encoder wrote it, so it is valid JSON), its error
// with encoding/json.
func AppendMultiResponse(b []byte, out BatchResponse) ([]byte, error) {
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

// splitMultiRequest is DecodeMultiRequest's one pass; false means "decode
// with encoding/json".
func splitMultiRequest(body []byte) (MultiRequest, bool) {
	d := jsonwire.NewDecoder(body)
	var in MultiRequest
	if d.ObjectStart() != nil {
		return MultiRequest{}, false
	}
	seenCalls := false
	for d.NextMember() {
		if string(d.Key()) != "calls" || seenCalls {
			return MultiRequest{}, false
		}
		seenCalls = true
		if d.Null() {
			continue // as encoding/json: calls stays nil
		}
		calls, ok := readMultiCalls(&d)
		if !ok {
			return MultiRequest{}, false
		}
		in.Calls = calls
	}
	if d.End() != nil {
		return MultiRequest{}, false
	}
	return in, true
}

// readMultiCalls reads the array of a multi-call request's calls; "[]"
// is an empty slice, as encoding/json decodes it.
func readMultiCalls(d *jsonwire.Decoder) ([]MultiCall, bool) {
	if d.ArrayStart() != nil {
		return nil, false
	}
	calls := []MultiCall{}
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
func readMultiCall(d *jsonwire.Decoder) (MultiCall, bool) {
	var mc MultiCall
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

// splitMultiResponse is DecodeMultiResponse's one pass for answers whose
// results all succeeded; false means "decode with encoding/json".
func splitMultiResponse(body []byte) (BatchResponse, bool) {
	d := jsonwire.NewDecoder(body)
	if d.ObjectStart() != nil {
		return BatchResponse{}, false
	}
	var out BatchResponse
	seenResults := false
	for d.NextMember() {
		if string(d.Key()) != "results" || seenResults || d.ArrayStart() != nil {
			return BatchResponse{}, false
		}
		seenResults = true
		out.Results = []Result{}
		for d.NextItem() {
			r, ok := readBatchResult(&d)
			if !ok {
				return BatchResponse{}, false
			}
			out.Results = append(out.Results, r)
		}
	}
	if d.End() != nil || !seenResults {
		return BatchResponse{}, false
	}
	return out, true
}

// readBatchResult reads one successful result: {"ok","replayed"}.
func readBatchResult(d *jsonwire.Decoder) (Result, bool) {
	var r Result
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

// AppendMultiCall appends one call of a multi-call request.
func AppendMultiCall(b []byte, method, timeout string, header map[string]string, request []byte) []byte {
	b = append(appendMultiCallHead(b, method, timeout, header), request...)
	return append(b, '}')
}

// appendMultiCallHead appends one call of a multi-call request up to its
// request: {"method":…,"timeout":…,"header":…,"request":
func appendMultiCallHead(b []byte, method, timeout string, header map[string]string) []byte {
	b = append(b, `{"method":`...)
	b = strconv.AppendQuote(b, method)
	if timeout != "" {
		b = append(append(append(b, `,"timeout":"`...), timeout...), '"')
	}
	if len(header) > 0 {
		b = append(append(b, `,"header":`...), mustJSON(header)...)
	}
	return append(b, `,"request":`...)
}

// MultiCallBody builds a multi-call request's body, {"calls":[…]}, around
// requests that are already encoded, without copying them: the body is the
// envelope's own bytes (one buffer) with each request between them, written
// in order (Parts). A request is most of a call's bytes, and a copy of each
// into one buffer was the client's largest allocation per batched call.
// The bytes are those of AppendMultiCall's calls in {"calls":[…]}.
type MultiCallBody struct {
	frame []byte   // the envelope's own bytes
	cuts  []int    // where in frame each request goes
	reqs  [][]byte // the requests, as encoded
}

// NewMultiCallBody returns an empty body with room for calls calls.
func NewMultiCallBody(calls int) *MultiCallBody {
	return &MultiCallBody{frame: make([]byte, 0, 16+48*calls), cuts: make([]int, 0, calls), reqs: make([][]byte, 0, calls)}
}

// Add adds a call; request must stay unchanged until the body is sent.
func (b *MultiCallBody) Add(method, timeout string, header map[string]string, request []byte) {
	if len(b.reqs) == 0 {
		b.frame = append(b.frame, `{"calls":[`...)
	} else {
		b.frame = append(b.frame, ',')
	}
	b.frame = appendMultiCallHead(b.frame, method, timeout, header)
	b.cuts = append(b.cuts, len(b.frame))
	b.reqs = append(b.reqs, request)
	b.frame = append(b.frame, '}')
}

// Parts ends the body and returns it as the pieces to write in order, and
// its length in bytes.
func (b *MultiCallBody) Parts() (net.Buffers, int) {
	if len(b.reqs) == 0 {
		b.frame = append(b.frame, `{"calls":[`...)
	}
	b.frame = append(b.frame, `]}`...)
	parts := make(net.Buffers, 0, 2*len(b.reqs)+1)
	n, prev := len(b.frame), 0
	for i, cut := range b.cuts {
		parts = append(parts, b.frame[prev:cut], b.reqs[i])
		n += len(b.reqs[i])
		prev = cut
	}
	return append(parts, b.frame[prev:]), n
}

// mustJSON encodes v, or an internal error's shape if it does not encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"code":"internal","message":"did not encode"}`)
	}
	return b
}
