package frames

import (
	"encoding/json"
	"net/http"
)

// MaxHeaderBytes bounds the encoded header a change carries to its
// watchers (a W3C traceparent is 55 bytes, a tracestate at most 512): a
// larger one is not carried.
const MaxHeaderBytes = 1024

// EncodeHeader encodes h (one value per name, names as given) as a frame's
// "header" member's value, a JSON object, or nil when h is empty or its
// encoding is over MaxHeaderBytes.
func EncodeHeader(h http.Header) []byte {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	b, err := json.Marshal(m)
	if err != nil || len(b) > MaxHeaderBytes || len(m) == 0 {
		return nil
	}
	return b
}

// HeaderOf is a frame's header member as an http.Header, names as sent.
func HeaderOf(m map[string]string) http.Header {
	if len(m) == 0 {
		return nil
	}
	h := make(http.Header, len(m))
	for k, v := range m {
		h[k] = []string{v}
	}
	return h
}
