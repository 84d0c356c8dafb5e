package frames

import "testing"

// TestChangeHeaderIsBounded: a write's trace context is encoded as the
// header its frames carry (the form TestFrameHeaderRoundTrips reads
// back), and a header over its bound is not carried.
func TestChangeHeaderIsBounded(t *testing.T) {
	header := EncodeHeader(map[string][]string{"traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if want := `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`; string(header) != want {
		t.Errorf("header %s, want %s", header, want)
	}
	big := make([]byte, MaxHeaderBytes)
	for i := range big {
		big[i] = 'x'
	}
	if h := EncodeHeader(map[string][]string{"tracestate": {string(big)}}); h != nil {
		t.Errorf("a header of %d bytes was carried", len(h))
	}
}
