package suite

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"net/http"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
)

// holder keeps idle lockstep clients (and their informers) open.
type holder struct {
	clients   []*framework.Client
	informers []*framework.Informer[watchObject]
	tr        *http.Transport
	cancel    context.CancelFunc
}

// openSessions opens n sessions of the benchmark contract at url, one
// client (one instance, as one simulated node) each, sharing one transport
// and one Heartbeats, as a node simulator runs them. They open in waves of
// 100, as nodes joining. tr is the transport (nil: the default one).
func openSessions(url string, n int, tr *http.Transport) (*holder, error) {
	if tr == nil {
		tr = framework.NewTransport(nil)
	}
	h := &holder{tr: tr, cancel: func() {}}
	beats := framework.NewHeartbeats(quiet, nil)
	const wave = 100
	for len(h.clients) < n {
		start := len(h.clients)
		for i := start; i < min(start+wave, n); i++ {
			cl, err := framework.NewClient(benchgen.Contract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Instance: fmt.Sprintf("node-%05d", i), Endpoints: []string{url}, Transport: h.tr, Heartbeats: beats, Logger: quiet})
			if err != nil {
				return nil, errors.Join(err, h.close())
			}
			h.clients = append(h.clients, cl)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		for _, cl := range h.clients[start:] {
			if err := cl.WaitReady(ctx); err != nil {
				cancel()
				return nil, errors.Join(err, h.close())
			}
		}
		cancel()
	}
	return h, nil
}

// openWatchers opens n idle watchers (informers) of the one-key idle topic
// at url, results.WatchersPerClient to a client.
func openWatchers(url string, n int) (*holder, error) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &holder{tr: framework.NewTransport(nil), cancel: cancel}
	var cl *framework.Client
	for i := range n {
		if i%results.WatchersPerClient == 0 {
			var err error
			cl, err = framework.NewClient(topicContract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
				Instance: fmt.Sprintf("watcher-%05d", i), Endpoints: []string{url}, Transport: h.tr, Logger: quiet})
			if err != nil {
				return nil, errors.Join(err, h.close())
			}
			h.clients = append(h.clients, cl)
		}
		inf, err := framework.Watch(ctx, cl, idleTopic, framework.InformerHandlers[watchObject]{})
		if err != nil {
			return nil, errors.Join(err, h.close())
		}
		h.informers = append(h.informers, inf)
		if len(h.informers)%results.WatchersPerClient == 0 || i == n-1 {
			if err := waitSynced(h.informers[len(h.informers)-1-(len(h.informers)-1)%results.WatchersPerClient:]); err != nil {
				return nil, errors.Join(err, h.close())
			}
		}
	}
	return h, nil
}

func waitSynced(infs []*framework.Informer[watchObject]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, inf := range infs {
		if err := inf.WaitForSync(ctx); err != nil {
			return fmt.Errorf("a watcher did not sync: %w", err)
		}
	}
	return nil
}

// close stops every informer and closes every client, a few dozen at a
// time.
func (h *holder) close() error {
	h.cancel()
	for _, inf := range h.informers {
		inf.Stop()
	}
	var wg sync.WaitGroup
	work := make(chan *framework.Client)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cl := range work {
				_ = cl.Close()
			}
		}()
	}
	for _, cl := range h.clients {
		work <- cl
	}
	close(work)
	wg.Wait()
	h.tr.CloseIdleConnections()
	return nil
}
