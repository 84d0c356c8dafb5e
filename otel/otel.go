// Package otellockstep traces lockstep calls with OpenTelemetry: a span
// for every call a client makes and every entry a server handles, and the
// W3C trace context (traceparent, tracestate) carried from one to the
// other in the call's headers, so that a trace crosses components the way
// the calls do.
//
// It is built only on the framework's public interceptors
// ([framework.Interceptor]): add [ClientInterceptor] to
// ClientConfig.Interceptors and [ServerInterceptor] to
// ServerConfig.Interceptors. It is a module of its own, so that the
// framework's go.mod does not grow by OpenTelemetry.
//
// What a span covers: on the client, the whole call as the caller sees it,
// blocking for a compatible peer and resends included (the framework's
// client interceptors wrap that); on the server, the handler, with its
// context carrying the span, so a handler's own spans are its children.
// Calls that travel in one multi-call (the client's automatic batching)
// each carry their own trace context, and each is its own server span.
// Every item of a batch call is a server span of its own, a child of the
// one client span that sent the batch. Items collected from other requests
// keep those requests' traces: given their contexts
// ([framework.WithItemContexts]), each such item gets a client span of its
// own, a child of the item's context linked to the batch's span, and its
// trace context travels in the item's own headers (docs/protocol.md), so
// that the item's server span is that span's child. The batch's span links
// to each item's context.
//
// Topic changes carry the trace context of the write that made them to
// every watcher ([Propagator]); a watcher's handler starts a delivery span
// linked to that write ([StartDelivery]).
package otellockstep

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep-dev/lockstep/framework"
)

// instrumentation is the tracer's name: this package's import path.
const instrumentation = "github.com/lockstep-dev/lockstep/otel"

// Attribute keys lockstep adds to its spans, beside OpenTelemetry's RPC
// conventions (rpc.system "lockstep", rpc.service the contract, rpc.method
// the method).
const (
	// AttrVersion is the contract version a call travels at.
	AttrVersion = attribute.Key("lockstep.contract.version")
	// AttrEntry is a server entry's kind (framework.EntryKind).
	AttrEntry = attribute.Key("lockstep.entry")
	// AttrCode is the error code of a call that failed (framework.Code).
	AttrCode = attribute.Key("lockstep.code")
	// AttrPeerComponent and AttrPeerInstance name the other side, where
	// it is known.
	AttrPeerComponent = attribute.Key("lockstep.peer.component")
	AttrPeerInstance  = attribute.Key("lockstep.peer.instance")
	// AttrBatchItem is the index of a batch call's item a server span
	// handles.
	AttrBatchItem = attribute.Key("lockstep.batch.item")
	// AttrEndpoint is, on the client, the endpoint the call went to last.
	AttrEndpoint = attribute.Key("lockstep.endpoint")
	// AttrTopic and AttrTopicKey name the topic and key of a delivery
	// span ([StartDelivery]).
	AttrTopic    = attribute.Key("lockstep.topic")
	AttrTopicKey = attribute.Key("lockstep.topic.key")
)

// Option configures the interceptors.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	entries    map[framework.EntryKind]bool
}

// WithTracerProvider sets where spans go; default otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.provider = tp })
}

// WithPropagator sets how trace context travels in headers; default
// otel.GetTextMapPropagator(), or the W3C trace context and baggage where
// none is set globally (OpenTelemetry's global default propagates nothing).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagator = p })
}

// WithEntries sets the kinds of server entries that get spans; default
// calls (unary, batch items, calls of multi-calls), handshakes, topic
// writes, watches and plain-serving calls. Heartbeats and session closes,
// which every session sends every second or so and which say nothing of a
// trace, are left out unless named here.
func WithEntries(kinds ...framework.EntryKind) Option {
	return optionFunc(func(c *config) {
		c.entries = map[framework.EntryKind]bool{}
		for _, k := range kinds {
			c.entries[k] = true
		}
	})
}

func newConfig(opts []Option) *config {
	c := &config{entries: map[framework.EntryKind]bool{
		framework.EntryCall: true, framework.EntryHandshake: true, framework.EntryTopicWrite: true,
		framework.EntryWatch: true, framework.EntryPlain: true,
	}}
	for _, o := range opts {
		o.apply(c)
	}
	if c.provider == nil {
		c.provider = otel.GetTracerProvider()
	}
	if c.propagator == nil {
		c.propagator = otel.GetTextMapPropagator()
		if len(c.propagator.Fields()) == 0 {
			c.propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	return c
}

// ClientInterceptor returns a client interceptor that makes a client span
// for every call and puts its trace context in the call's headers, where
// the server's [ServerInterceptor] finds it.
func ClientInterceptor(opts ...Option) framework.Interceptor {
	cfg := newConfig(opts)
	tracer := cfg.provider.Tracer(instrumentation)
	return func(next framework.CallFunc) framework.CallFunc {
		return func(ctx context.Context, call *framework.Call) (any, error) {
			name := call.Contract + "/" + call.Method
			opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(rpcAttributes(call)...)}
			var links []trace.Link
			for _, ictx := range call.ItemContexts {
				if ictx == nil {
					continue
				}
				if sc := trace.SpanContextFromContext(ictx); sc.IsValid() {
					links = append(links, trace.Link{SpanContext: sc})
				}
			}
			if len(links) > 0 {
				opts = append(opts, trace.WithLinks(links...))
			}
			ctx, span := tracer.Start(ctx, name, opts...)
			defer span.End()
			cfg.propagator.Inject(ctx, propagation.HeaderCarrier(call.Header))
			items := startItemSpans(ctx, tracer, cfg.propagator, name, call)
			out, err := next(ctx, call)
			for _, is := range items {
				end(is, err)
				is.End()
			}
			if call.Version != "" {
				span.SetAttributes(AttrVersion.String(call.Version))
			}
			if call.Peer.Component != "" {
				span.SetAttributes(AttrPeerComponent.String(call.Peer.Component), AttrPeerInstance.String(call.Peer.Instance))
			}
			if call.Endpoint != "" {
				span.SetAttributes(AttrEndpoint.String(call.Endpoint))
			}
			end(span, err)
			return out, err
		}
	}
}

// ServerInterceptor returns a server interceptor that makes a server span
// for every entry of the kinds configured ([WithEntries]), the child of the
// trace context in the entry's headers, and hands the handler a context
// carrying it.
func ServerInterceptor(opts ...Option) framework.Interceptor {
	cfg := newConfig(opts)
	tracer := cfg.provider.Tracer(instrumentation)
	return func(next framework.CallFunc) framework.CallFunc {
		return func(ctx context.Context, call *framework.Call) (any, error) {
			if !cfg.entries[call.Kind] {
				return next(ctx, call)
			}
			ctx = cfg.propagator.Extract(ctx, propagation.HeaderCarrier(call.Header))
			name := call.Contract + "/" + call.Method
			if call.Kind != framework.EntryCall && call.Kind != framework.EntryPlain {
				name = call.Contract + "/" + string(call.Kind)
				if call.Method != "" {
					name += " " + call.Method
				}
			}
			attrs := append(rpcAttributes(call), AttrEntry.String(string(call.Kind)))
			if call.Version != "" {
				attrs = append(attrs, AttrVersion.String(call.Version))
			}
			if call.Peer.Component != "" {
				attrs = append(attrs, AttrPeerComponent.String(call.Peer.Component), AttrPeerInstance.String(call.Peer.Instance))
			}
			if call.Batch {
				attrs = append(attrs, AttrBatchItem.Int(call.Item))
			}
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			out, err := next(ctx, call)
			end(span, err)
			return out, err
		}
	}
}

// startItemSpans starts, for every item of a batch call whose context
// ([framework.WithItemContexts]) carries a span, a client span that is that
// span's child and links to the batch's span (the one in ctx), and puts its
// trace context in the item's own headers.
func startItemSpans(ctx context.Context, tracer trace.Tracer, prop propagation.TextMapPropagator, name string, call *framework.Call) []trace.Span {
	if len(call.ItemContexts) != len(call.ItemHeader) {
		return nil
	}
	batch := trace.SpanContextFromContext(ctx)
	var spans []trace.Span
	for i, ictx := range call.ItemContexts {
		if ictx == nil || !trace.SpanContextFromContext(ictx).IsValid() {
			continue
		}
		ictx, span := tracer.Start(ictx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithLinks(trace.Link{SpanContext: batch}),
			trace.WithAttributes(append(rpcAttributes(call), AttrBatchItem.Int(i))...))
		h := http.Header{}
		prop.Inject(ictx, propagation.HeaderCarrier(h))
		call.ItemHeader[i] = h
		spans = append(spans, span)
	}
	return spans
}

func rpcAttributes(call *framework.Call) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("rpc.system", "lockstep"),
		attribute.String("rpc.service", call.Contract),
		attribute.String("rpc.method", call.Method),
	}
}

// end records a call's outcome on its span: an error's code and message.
func end(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.SetAttributes(AttrCode.String(string(framework.CodeOf(err))))
	span.SetStatus(codes.Error, err.Error())
}

// Propagator returns the [framework.Propagator] that carries the W3C trace
// context (the configured propagator's, [WithPropagator]) from a topic's
// write to its watchers: set it in ServerConfig.Propagator, so that each
// change carries the trace context of the write that made it
// (TopicWriter.SetContext, or a client's topic write, whose server span
// [ServerInterceptor] starts), and in ClientConfig.Propagator, so that a
// TopicPublisher's writes carry their context and an informer's
// DeliveryContext holds the write's.
func Propagator(opts ...Option) framework.Propagator {
	return propagator{newConfig(opts).propagator}
}

type propagator struct{ p propagation.TextMapPropagator }

func (p propagator) Inject(ctx context.Context, h http.Header) {
	p.p.Inject(ctx, propagation.HeaderCarrier(h))
}

func (p propagator) Extract(ctx context.Context, h http.Header) context.Context {
	return p.p.Extract(ctx, propagation.HeaderCarrier(h))
}

// StartDelivery starts a consumer span for a topic change an informer's
// handler reports, linked to the span of the write that made it. Call it
// in the handler with the informer's DeliveryContext: the span is a new
// trace's root (a watcher's delivery is level-based, possibly of several
// writes coalesced, so it is no child of the write) with a link to the
// write's span when the change carried one; end it when the handler is
// done, and start the handler's own spans from the context it returns.
func StartDelivery(dctx context.Context, contract, topic, key string, opts ...Option) (context.Context, trace.Span) {
	cfg := newConfig(opts)
	start := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("rpc.system", "lockstep"), attribute.String("rpc.service", contract),
			AttrTopic.String(topic), AttrTopicKey.String(key))}
	if sc := trace.SpanContextFromContext(dctx); sc.IsValid() {
		start = append(start, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return cfg.provider.Tracer(instrumentation).Start(dctx, contract+"/"+topic+" deliver", start...)
}
