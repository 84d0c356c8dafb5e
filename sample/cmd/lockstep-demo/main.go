// Command lockstep-demo shows lockstep's core promise with two components on
// 127.0.0.1: a kubelet upgraded to contract v2 before its nodecontroller
// blocks instead of talking to an incompatible peer, and is released the
// moment a v2 nodecontroller replaces the v1 one at the same address. It
// prints a timeline and exits non-zero if any call failed or was processed
// by a peer of another version.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Status is what a kubelet reports; v2 adds the pod count.
type Status struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
	Pods  *int   `json:"pods,omitempty"`
}

// Ack answers a status; Version says which contract version processed it.
type Ack struct {
	Version string `json:"version"`
}

// contract describes nodestatus at v1 or v2 by hand, as generated code would.
func contract(version string) *framework.Contract {
	status := `{"type":"object","required":["node","ready"],"additionalProperties":false,
	  "properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"}}}`
	if version == "2.0.0" {
		status = `{"type":"object","required":["node","ready","pods"],"additionalProperties":false,
		  "properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"},"pods":{"type":"integer","minimum":0}}}`
	}
	return framework.MustContract(handshake.Contract{
		Name: "nodestatus", Version: version, Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"ReportStatus": {Request: "Status", Response: "Ack"}},
		Schemas: map[string]json.RawMessage{
			"Status": json.RawMessage(status),
			"Ack":    json.RawMessage(`{"type":"object","required":["version"],"properties":{"version":{"type":"string"}}}`),
		},
	})
}

type timeline struct {
	start time.Time
	out   io.Writer
	mu    sync.Mutex
}

func (t *timeline) event(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "%7.3fs  %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	skew := flag.Duration("skew", time.Second, "how long the kubelet runs v2 before the nodecontroller does")
	flag.Parse()
	if err := run(os.Stdout, *skew); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// nodecontroller starts a nodecontroller at version on addr.
func nodecontroller(addr, version string, processed *atomic.Int64) (*framework.Server, chan error, error) {
	srv, err := framework.NewServer(framework.ServerConfig{
		Component: "nodecontroller", Release: map[string]string{"1.0.0": "1.30.0", "2.0.0": "1.31.0"}[version],
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, nil, err
	}
	framework.HandleUnary(srv, contract(version), "ReportStatus", func(_ context.Context, s *Status) (*Ack, error) {
		processed.Add(1)
		return &Ack{Version: version}, nil
	})
	var l net.Listener
	for i := 0; i < 100; i++ { // the old server may still hold the port for a moment
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	return srv, done, nil
}

// kubelet reports every 20ms until stop closes, counting outcomes.
type kubelet struct {
	client         *framework.Client
	version        string
	ok, failed     atomic.Int64
	wrongVersion   atomic.Int64
	longestBlocked atomic.Int64
}

func (k *kubelet) run(stop <-chan struct{}, tl *timeline) {
	pods := 3
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		st := &Status{Node: "node-1", Ready: true}
		if k.version == "2.0.0" {
			st.Pods = &pods
		}
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ack, err := framework.CallUnary[Status, Ack](ctx, k.client, "ReportStatus", st)
		cancel()
		took := time.Since(began)
		if took > 100*time.Millisecond {
			tl.event("kubelet %s: a call blocked %v waiting for a compatible nodecontroller, then succeeded", k.version, took.Round(time.Millisecond))
		}
		if int64(took) > k.longestBlocked.Load() {
			k.longestBlocked.Store(int64(took))
		}
		switch {
		case err != nil:
			k.failed.Add(1)
			tl.event("kubelet %s: call failed: %v", k.version, err)
		case ack.Version != k.version:
			k.wrongVersion.Add(1)
		default:
			k.ok.Add(1)
		}
	}
}

func run(out io.Writer, skew time.Duration) error {
	tl := &timeline{start: time.Now(), out: out}
	fmt.Fprintln(out, "lockstep demo: kubelet -> nodecontroller over contract nodestatus, rolling upgrade v1 -> v2")
	fmt.Fprintln(out)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()

	var processedV1, processedV2 atomic.Int64
	nc1, nc1done, err := nodecontroller(addr, "1.0.0", &processedV1)
	if err != nil {
		return err
	}
	tl.event("nodecontroller 1.30.0 (nodestatus 1.0.0) listening on %s", addr)

	newKubelet := func(version, release string) (*kubelet, error) {
		c, err := framework.NewClient(contract(version), framework.ClientConfig{
			Component: "kubelet", Release: release, Endpoints: []string{"http://" + addr},
			Logger: slog.New(slog.DiscardHandler),
		})
		return &kubelet{client: c, version: version}, err
	}
	k1, err := newKubelet("1.0.0", "1.30.0")
	if err != nil {
		return err
	}
	stop1 := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); k1.run(stop1, tl) }()
	tl.event("kubelet 1.30.0 (nodestatus 1.0.0) started: both sides agree on 1.0.0")
	time.Sleep(500 * time.Millisecond)

	// The kubelet is upgraded first.
	close(stop1)
	wg.Wait()
	k1.client.Close()
	tl.event("kubelet 1.30.0 stopped after %d calls", k1.ok.Load())
	k2, err := newKubelet("2.0.0", "1.31.0")
	if err != nil {
		return err
	}
	stop2 := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); k2.run(stop2, tl) }()
	tl.event("kubelet 1.31.0 (nodestatus 2.0.0) started: nodecontroller speaks only 1.0.0, so its calls block")
	time.Sleep(200 * time.Millisecond)
	for _, e := range k2.client.Endpoints() {
		tl.event("kubelet 1.31.0 sees %s: %s (%s)", e.URL, e.State, e.Error)
	}
	time.Sleep(max(skew-200*time.Millisecond, 0))

	// Then the nodecontroller, replaced in place.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = nc1.Shutdown(ctx)
	cancel()
	if err := errors.Join(err, <-nc1done); err != nil {
		return err
	}
	tl.event("nodecontroller 1.30.0 drained and stopped")
	nc2, nc2done, err := nodecontroller(addr, "2.0.0", &processedV2)
	if err != nil {
		return err
	}
	tl.event("nodecontroller 1.31.0 (nodestatus 2.0.0) listening on %s", addr)
	time.Sleep(500 * time.Millisecond)
	close(stop2)
	wg.Wait()
	k2.client.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	err = nc2.Shutdown(ctx)
	cancel()
	if err := errors.Join(err, <-nc2done); err != nil {
		return err
	}
	tl.event("done")

	fmt.Fprintln(out)
	fmt.Fprintf(out, "calls at 1.0.0: %d ok, %d failed; processed by the 1.0.0 nodecontroller: %d\n", k1.ok.Load(), k1.failed.Load(), processedV1.Load())
	fmt.Fprintf(out, "calls at 2.0.0: %d ok, %d failed; processed by the 2.0.0 nodecontroller: %d\n", k2.ok.Load(), k2.failed.Load(), processedV2.Load())
	fmt.Fprintf(out, "longest blocked call at 2.0.0: %v (the skew was %v)\n", time.Duration(k2.longestBlocked.Load()).Round(time.Millisecond), skew)
	switch {
	case k1.failed.Load()+k2.failed.Load() > 0:
		return errors.New("some calls failed")
	case k1.wrongVersion.Load()+k2.wrongVersion.Load() > 0:
		return errors.New("a call was processed by a peer of another version")
	case processedV1.Load() != k1.ok.Load() || processedV2.Load() != k2.ok.Load():
		return errors.New("calls answered and calls processed differ")
	case k2.ok.Load() == 0:
		return errors.New("the upgraded kubelet never got through")
	}
	fmt.Fprintln(out, "invariants held: no call failed, none crossed versions, the blocked caller was released by the upgrade")
	return nil
}
