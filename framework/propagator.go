package framework

import (
	"context"
	"encoding/json"
	"net/http"
)

// Propagator carries what a context holds of a request (its trace context)
// in headers: from a topic's write to every watcher of the change it makes.
// The writer's side injects it when the change is written
// ([TopicWriter.SetContext], [TopicPublisher.Set], a client's topic write
// as the server handles it); the change's frames carry it
// (docs/topics.md, "header"); an [Informer] extracts it for the handler
// that reports the change ([Informer.DeliveryContext]). Set it in
// ServerConfig.Propagator and ClientConfig.Propagator; the otel module
// provides one for OpenTelemetry. Without one, changes carry nothing.
type Propagator interface {
	// Inject writes what ctx carries into h.
	Inject(ctx context.Context, h http.Header)
	// Extract returns ctx carrying what h holds.
	Extract(ctx context.Context, h http.Header) context.Context
}

// maxChangeHeaderBytes bounds the encoded header a change carries to its
// watchers (a W3C traceparent is 55 bytes, a tracestate at most 512): a
// larger one is not carried.
const maxChangeHeaderBytes = 1024

// changeHeader encodes what p injects from ctx as a frame's "header"
// member's value, or nil when there is nothing (or too much) to carry.
func changeHeader(p Propagator, ctx context.Context) []byte {
	if p == nil || ctx == nil {
		return nil
	}
	h := http.Header{}
	p.Inject(ctx, h)
	return encodeChangeHeader(h)
}

// headerOf is a frame's header member as an http.Header, names as sent.
func headerOf(m map[string]string) http.Header {
	if len(m) == 0 {
		return nil
	}
	h := make(http.Header, len(m))
	for k, v := range m {
		h[k] = []string{v}
	}
	return h
}

// encodeChangeHeader encodes h (one value per name, names as given) as a
// JSON object, or nil when h is empty or its encoding is over
// maxChangeHeaderBytes.
func encodeChangeHeader(h http.Header) []byte {
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
	if err != nil || len(b) > maxChangeHeaderBytes || len(m) == 0 {
		return nil
	}
	return b
}
