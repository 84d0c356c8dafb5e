package discovery_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/discovery"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// replica is one nodecontroller serving the bench contract, counting the
// calls it handled.
type replica struct {
	*frameworktest.Running
	handled atomic.Int64
}

func startReplica(t *testing.T, c *framework.Contract, addr string) *replica {
	t.Helper()
	r := &replica{}
	cfg := framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		SessionTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond}
	r.Running = frameworktest.StartServerAt(t, addr, cfg, func(s *framework.Server) {
		framework.HandleUnary(s, c, "ReportStatus", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true, Generation: r.handled.Add(1)}, nil
		})
		framework.HandleBatch(s, c, "ReportStatuses", func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
			return &benchmsg.Ack{Accepted: true}, nil
		})
	})
	return r
}

func TestClientFollowsDNS(t *testing.T) {
	t.Parallel()
	contract, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		// name names the record type.
		name string
		// start starts three replicas the way the records can name them.
		start func(t *testing.T) []*replica
		// config is the source's configuration, less its server and, with
		// Host, the replicas' port.
		config discovery.DNSConfig
		// publish makes the zone's records name replicas.
		publish func(t *testing.T, z *zone, replicas ...*replica)
	}{
		{
			// A records name the replicas' addresses, on one port, as a
			// headless Service does: replicas on 127.0.0.2, .3 and .4.
			name: "A",
			start: func(t *testing.T) []*replica {
				first := startReplica(t, contract, "127.0.0.2:0")
				_, port, _ := net.SplitHostPort(first.Addr)
				return []*replica{first,
					startReplica(t, contract, "127.0.0.3:"+port),
					startReplica(t, contract, "127.0.0.4:"+port)}
			},
			config: discovery.DNSConfig{Host: host, Scheme: "http", Network: "ip4"},
			publish: func(t *testing.T, z *zone, replicas ...*replica) {
				var addrs []string
				for _, r := range replicas {
					a, _, _ := net.SplitHostPort(r.Addr)
					addrs = append(addrs, a)
				}
				z.setAddrs(host, addrs...)
			},
		},
		{
			// SRV records name each replica's pod and port: replicas on
			// random ports of 127.0.0.1.
			name: "SRV",
			start: func(t *testing.T) []*replica {
				return []*replica{startReplica(t, contract, "127.0.0.1:0"),
					startReplica(t, contract, "127.0.0.1:0"),
					startReplica(t, contract, "127.0.0.1:0")}
			},
			config: discovery.DNSConfig{Service: service, Scheme: "http", Network: "ip4"},
			publish: func(t *testing.T, z *zone, replicas ...*replica) {
				var targets []string
				for i, r := range replicas {
					_, port, _ := net.SplitHostPort(r.Addr)
					pod := fmt.Sprintf("pod-%d.nodecontroller.lockstep.svc.cluster.local.", i)
					z.setAddrs(pod, "127.0.0.1")
					targets = append(targets, pod+":"+port)
				}
				z.setSRV(t, service, targets...)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			replicas := tc.start(t)
			old, new1, new2 := replicas[0], replicas[1], replicas[2]
			z := startZone(t)
			tc.publish(t, z, old)
			cfg := tc.config
			if cfg.Host != "" {
				_, port, _ := net.SplitHostPort(old.Addr)
				cfg.Port, _ = strconv.Atoi(port)
			}
			src, _ := newDNS(t, z, cfg)
			client := frameworktest.NewClient(t, contract, framework.ClientConfig{
				Component: "kubelet", Release: "1.31.0", Source: src, HandshakeWait: 5 * time.Second})

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := client.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			calls(t, ctx, client, 5)
			if n := old.handled.Load(); n != 5 {
				t.Fatalf("the first replica handled %d calls, want 5", n)
			}

			// Calls go on while the records move to two other replicas.
			var failed []error
			var mu sync.Mutex
			stop := make(chan struct{})
			caller := make(chan struct{})
			go func() {
				defer close(caller)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := report(ctx, client); err != nil {
						mu.Lock()
						failed = append(failed, err)
						mu.Unlock()
						return
					}
				}
			}()
			tc.publish(t, z, new1, new2)
			waitEndpoints(t, client, "ready", new1.URL, new2.URL)
			close(stop)
			<-caller
			if len(failed) > 0 {
				t.Fatalf("a call failed while the endpoints changed: %v", failed[0])
			}

			// The replica no longer named gets nothing; the new ones share.
			before := old.handled.Load()
			calls(t, ctx, client, 20)
			if n := old.handled.Load(); n != before {
				t.Errorf("the removed replica handled %d more calls", n-before)
			}
			if a, b := new1.handled.Load(), new2.handled.Load(); a == 0 || b == 0 || a+b < 20 {
				t.Errorf("new replicas handled %d and %d calls, want 20 between them, some each", a, b)
			}

			// A DNS outage keeps them.
			z.setMode(serverFailure)
			from := z.total()
			require.Eventually(t, func() bool { return z.total() >= from+3 }, 5*time.Second, 5*time.Millisecond, "failed resolutions")
			waitEndpoints(t, client, "ready", new1.URL, new2.URL)
			calls(t, ctx, client, 5)

			// The Service's deletion empties the set: calls fail fast.
			z.setMode(answering)
			z.remove(service)
			z.remove(host)
			waitEndpoints(t, client, "")
			_, err := report(ctx, client, framework.FailFast())
			if code := framework.CodeOf(err); code != framework.CodeUnavailable {
				t.Fatalf("call with no endpoints: %v (code %s), want unavailable", err, code)
			}
		})
	}
}

func report(ctx context.Context, c *framework.Client, opts ...framework.CallOption) (*benchmsg.Ack, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](ctx, c, "ReportStatus", benchmsg.Node(1), opts...)
}

// calls makes n calls, each of which must succeed.
func calls(t *testing.T, ctx context.Context, c *framework.Client, n int) {
	t.Helper()
	for i := range n {
		if _, err := report(ctx, c); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// waitEndpoints waits until the client's endpoints are exactly urls, each
// in state (any state when "").
func waitEndpoints(t *testing.T, c *framework.Client, state string, urls ...string) {
	t.Helper()
	slices.Sort(urls)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := c.Endpoints()
		var gotURLs []string
		for _, e := range got {
			gotURLs = append(gotURLs, e.URL)
			if state != "" {
				assert.Equal(ct, state, e.State, "endpoint %s", e.URL)
			}
		}
		assert.Equal(ct, urls, gotURLs, "endpoints %+v", got)
	}, 5*time.Second, 5*time.Millisecond)
}
