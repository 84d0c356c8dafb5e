package suite

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// jsonCodec is gRPC's codec for the gRPC+JSON anchor: encoding/json over
// the hand-written Go types, as a gRPC service that speaks JSON would.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (jsonCodec) Name() string                       { return "json" }

func init() { encoding.RegisterCodec(jsonCodec{}) }

// jsonReportStatus is the gRPC+JSON anchor's method: the same
// NodeStatus→Ack in the hand-written types.
const jsonReportStatus = "/lockstep.bench.v1.NodeControllerJSON/ReportStatus"

// jsonService is the gRPC+JSON anchor's service, described by hand (its
// messages are Go structs, not protobuf ones, so there is nothing to
// generate).
func jsonService(generation *atomic.Int64) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "lockstep.bench.v1.NodeControllerJSON",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "ReportStatus",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				var n benchmsg.NodeStatus
				if err := dec(&n); err != nil {
					return nil, err
				}
				return &benchmsg.Ack{Accepted: true, Generation: generation.Add(1)}, nil
			},
		}},
		Metadata: "nodestatus_json",
	}
}

// grpcServer is the gRPC anchor: ReportStatus and Heartbeat in protobuf,
// ReportStatus in JSON, and Watch (a stream per watcher) fed by Publish.
type grpcServer struct {
	benchpb.UnimplementedNodeControllerServer
	generation atomic.Int64
	srv        *grpc.Server
	addr       string
	done       chan error

	mu       sync.Mutex
	watchers map[chan *benchpb.Change]struct{}
	dropped  atomic.Int64
}

// startGRPC serves the anchor on addr; opts are the server's (mutual TLS:
// trust.grpcServerOption).
func startGRPC(addr string, opts ...grpc.ServerOption) (*grpcServer, error) {
	l, err := listenRetrying(addr)
	if err != nil {
		return nil, err
	}
	g := &grpcServer{srv: grpc.NewServer(opts...), addr: l.Addr().String(), done: make(chan error, 1),
		watchers: map[chan *benchpb.Change]struct{}{}}
	benchpb.RegisterNodeControllerServer(g.srv, g)
	g.srv.RegisterService(jsonService(&g.generation), nil)
	go func() { g.done <- g.srv.Serve(l) }()
	return g, nil
}

func (g *grpcServer) ReportStatus(context.Context, *benchpb.NodeStatus) (*benchpb.Ack, error) {
	return &benchpb.Ack{Accepted: true, Generation: g.generation.Add(1)}, nil
}

func (g *grpcServer) Heartbeat(_ context.Context, p *benchpb.Ping) (*benchpb.Ping, error) {
	return p, nil
}

// Watch streams every published change to one watcher until it goes.
func (g *grpcServer) Watch(_ *benchpb.WatchRequest, stream grpc.ServerStreamingServer[benchpb.Change]) error {
	ch := make(chan *benchpb.Change, results.WatchBuffer)
	g.mu.Lock()
	g.watchers[ch] = struct{}{}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.watchers, ch)
		g.mu.Unlock()
	}()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case c := <-ch:
			if err := stream.Send(c); err != nil {
				return err
			}
		}
	}
}

// Publish encodes change seq once and queues it for every watcher; a
// watcher whose queue is full loses it (counted in dropped).
func (g *grpcServer) Publish(seq int64, n *benchpb.NodeStatus) error {
	raw, err := proto.Marshal(n)
	if err != nil {
		return err
	}
	c := &benchpb.Change{Seq: seq, Object: raw}
	g.mu.Lock()
	defer g.mu.Unlock()
	for ch := range g.watchers {
		select {
		case ch <- c:
		default:
			g.dropped.Add(1)
		}
	}
	return nil
}

// Watchers returns how many watch streams are open.
func (g *grpcServer) Watchers() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.watchers)
}

func (g *grpcServer) stop() error {
	g.srv.Stop()
	err := <-g.done
	if errors.Is(err, grpc.ErrServerStopped) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// grpcConn dials the anchor the default way: one ClientConn, default
// backoff and keepalive, plaintext unless creds (trust.grpcDialOption)
// says otherwise.
func grpcConn(addr string, creds ...grpc.DialOption) (*grpc.ClientConn, error) {
	if len(creds) == 0 {
		creds = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	return grpc.NewClient(addr, creds...)
}
