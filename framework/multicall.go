package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"
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

// envelope is a one-pass reader of a multi-call envelope. Any method
// returning false means "not the plain shape": the caller falls back to
// encoding/json.
type envelope struct {
	b []byte
	i int
}

// maxPlainDepth bounds the nesting the one-pass reader follows; deeper
// values go to encoding/json, which has its own bound.
const maxPlainDepth = 1000

func (p *envelope) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte reads c after white space.
func (p *envelope) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek reports whether c comes next after white space, without reading it.
func (p *envelope) peek(c byte) bool {
	p.space()
	return p.i < len(p.b) && p.b[p.i] == c
}

// plainString reads a string without escapes, in valid UTF-8 (which
// encoding/json would keep as it is), and returns its bytes.
func (p *envelope) plainString() ([]byte, bool) {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			if !utf8.Valid(p.b[start:j]) {
				return nil, false
			}
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// key reads a member name without escapes and the ':' after it.
func (p *envelope) key() ([]byte, bool) {
	k, ok := p.plainString()
	return k, ok && p.byte(':')
}

// members reads an object's members, calling member after each name with
// the reader at its value; member reads the value.
func (p *envelope) members(member func(key []byte) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		k, ok := p.key()
		if !ok || !member(k) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// items reads an array's elements, calling item with the reader at each.
func (p *envelope) items(item func() bool) bool {
	if !p.byte('[') {
		return false
	}
	if p.byte(']') {
		return true
	}
	for {
		if !item() {
			return false
		}
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// raw reads any valid JSON value and returns its text.
func (p *envelope) raw() ([]byte, bool) {
	p.space()
	start := p.i
	if !p.value(0) {
		return nil, false
	}
	return p.b[start:p.i], true
}

// value checks and reads one JSON value, as encoding/json's scanner
// accepts it (strings may hold any bytes but control characters).
func (p *envelope) value(depth int) bool {
	p.space()
	if p.i >= len(p.b) || depth > maxPlainDepth {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		if p.byte('}') {
			return true
		}
		for {
			if !p.peek('"') || !p.anyString() || !p.byte(':') || !p.value(depth+1) {
				return false
			}
			if p.byte('}') {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case c == '[':
		p.i++
		if p.byte(']') {
			return true
		}
		for {
			if !p.value(depth + 1) {
				return false
			}
			if p.byte(']') {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case c == '"':
		return p.anyString()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return false
}

func (p *envelope) literal(word string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.i += len(word)
		return true
	}
	return false
}

// anyString reads a string at '"', escapes included.
func (p *envelope) anyString() bool {
	j := p.i + 1
	for j < len(p.b) {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(p.b) {
				return false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(p.b) {
					return false
				}
				for _, h := range p.b[j+2 : j+6] {
					if !isHex(h) {
						return false
					}
				}
				j += 6
			default:
				return false
			}
		default:
			j++
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *envelope) number() bool {
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	switch {
	case j < len(p.b) && p.b[j] == '0':
		j++
	case j < len(p.b) && p.b[j] >= '1' && p.b[j] <= '9':
		for j < len(p.b) && isDigit(p.b[j]) {
			j++
		}
	default:
		return false
	}
	if j < len(p.b) && p.b[j] == '.' {
		j++
		if j >= len(p.b) || !isDigit(p.b[j]) {
			return false
		}
		for j < len(p.b) && isDigit(p.b[j]) {
			j++
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		if j >= len(p.b) || !isDigit(p.b[j]) {
			return false
		}
		for j < len(p.b) && isDigit(p.b[j]) {
			j++
		}
	}
	p.i = j
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// end reports whether only white space is left.
func (p *envelope) end() bool {
	p.space()
	return p.i == len(p.b)
}

// splitMultiRequest is decodeMultiRequest's one pass; false means "decode
// with encoding/json".
func splitMultiRequest(body []byte) (multiRequest, bool) {
	p := &envelope{b: body}
	var in multiRequest
	seenCalls, callsNull := false, false
	ok := p.members(func(k []byte) bool {
		if string(k) != "calls" || seenCalls {
			return false
		}
		seenCalls = true
		if p.peek('n') {
			callsNull = true
			return p.literal("null") // as encoding/json: calls stays nil
		}
		return p.items(func() bool {
			var mc multiCall
			var seen [4]bool // method, request, timeout, header
			ok := p.peek('{') && p.members(func(k []byte) bool {
				var n int
				switch string(k) {
				case "method":
					n = 0
				case "request":
					n = 1
				case "timeout":
					n = 2
				case "header":
					n = 3
				default:
					return false
				}
				if seen[n] {
					return false
				}
				seen[n] = true
				switch n {
				case 0, 2:
					s, ok := p.plainString()
					if n == 0 {
						mc.Method = string(s)
					} else {
						mc.Timeout = string(s)
					}
					return ok
				case 1:
					r, ok := p.raw()
					mc.Request = r
					return ok
				}
				if p.peek('n') {
					return false
				}
				mc.Header = map[string]string{}
				return p.members(func(k []byte) bool {
					v, ok := p.plainString()
					if _, dup := mc.Header[string(k)]; dup {
						return false
					}
					mc.Header[string(k)] = string(v)
					return ok
				})
			})
			in.Calls = append(in.Calls, mc)
			return ok
		})
	})
	if !ok || !p.end() {
		return multiRequest{}, false
	}
	if seenCalls && !callsNull && in.Calls == nil {
		in.Calls = []multiCall{} // "calls":[] decodes to an empty slice
	}
	return in, true
}

// splitMultiResponse is decodeMultiResponse's one pass for answers whose
// results all succeeded; false means "decode with encoding/json".
func splitMultiResponse(body []byte) (batchResponse, bool) {
	p := &envelope{b: body}
	var out batchResponse
	seenResults := false
	ok := p.members(func(k []byte) bool {
		if string(k) != "results" || seenResults {
			return false
		}
		seenResults = true
		return p.items(func() bool {
			var r batchResult
			var seenOK, seenReplayed bool
			ok := p.peek('{') && p.members(func(k []byte) bool {
				switch {
				case string(k) == "ok" && !seenOK:
					seenOK = true
					if p.peek('n') {
						return false
					}
					raw, ok := p.raw()
					r.OK = raw
					return ok
				case string(k) == "replayed" && !seenReplayed:
					seenReplayed = true
					switch {
					case p.literal("true"):
						r.Replayed = true
						return true
					case p.literal("false"):
						return true
					}
				}
				return false
			})
			out.Results = append(out.Results, r)
			return ok
		})
	})
	if !ok || !p.end() || !seenResults {
		return batchResponse{}, false
	}
	if out.Results == nil {
		out.Results = []batchResult{}
	}
	return out, true
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
