// Command workqueue is a controller written the way client-go controllers
// are, over a lockstep topic instead of an API server's watch: a shared
// informer's handlers put keys on a client-go rate-limited work queue,
// workers take them off, read the object from the informer's lister and
// reconcile it, retrying failures with the queue's per-item backoff.
//
// Here the controller watches a node controller's NodeHealth topic and
// reports the nodes that are not ready, by zone (an index of the lister).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Contract is nodehealth 1.0.0: the node controller publishes every
// node's health as a topic; the remediator watches it.
var Contract = framework.MustContract(handshake.Contract{
	Name: "nodehealth", Version: "1.0.0", Server: "nodecontroller", Client: "remediator",
	Methods: map[string]handshake.Method{},
	Topics: map[string]handshake.Topic{
		"NodeHealth": {Object: "NodeHealth", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
	},
	Schemas: map[string]json.RawMessage{
		"NodeHealth": json.RawMessage(`{"type":"object","additionalProperties":false,"required":["node","ready"],
			"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"},"zone":{"type":"string"}}}`),
	},
})

// NodeHealth is one node's health.
type NodeHealth struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
	Zone  string `json:"zone,omitempty"`
}

// byZone is the lister's index of nodes by zone.
const byZone = "zone"

// Reconcile is the controller's work on one key: obj is the key's current
// object, nil when it is gone. An error puts the key back on the queue,
// after the queue's backoff for that key.
type Reconcile func(ctx context.Context, key string, obj *NodeHealth) error

// Controller feeds a rate-limited work queue from a shared informer.
type Controller struct {
	informer  *framework.SharedInformer[NodeHealth]
	lister    *framework.Lister[NodeHealth]
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile Reconcile
}

// NewController registers the controller's handlers and index on the
// factory's NodeHealth informer; the factory's Start starts the stream.
func NewController(f *framework.InformerFactory, limiter workqueue.TypedRateLimiter[string], reconcile Reconcile) (*Controller, error) {
	inf, err := framework.ForTopic[NodeHealth](f, "NodeHealth")
	if err != nil {
		return nil, err
	}
	if err := inf.AddIndexers(framework.Indexers[NodeHealth]{
		byZone: func(_ string, h *NodeHealth) []string { return []string{h.Zone} },
	}); err != nil {
		return nil, err
	}
	c := &Controller{
		informer: inf, lister: inf.Lister(), reconcile: reconcile,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodehealth"}),
	}
	// Handlers only enqueue keys: the queue collapses repeated changes of
	// a key into one piece of work, and the worker reads the latest object
	// from the lister, as client-go controllers do.
	inf.AddEventHandler(framework.InformerHandlers[NodeHealth]{
		OnAdd:    func(key string, _ *NodeHealth) { c.queue.Add(key) },
		OnUpdate: func(key string, _, _ *NodeHealth) { c.queue.Add(key) },
		OnDelete: func(key string, _ *NodeHealth) { c.queue.Add(key) },
	})
	return c, nil
}

// Run waits for the informer's cache, then runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := framework.WaitForCacheSync(ctx, c.informer); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext reconciles one key; it reports false once the queue is shut
// down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	obj, _ := c.lister.Get(key)
	if err := c.reconcile(ctx, key, obj); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// NotReady returns the nodes of a zone that are not ready, from the cache.
func (c *Controller) NotReady(zone string) ([]string, error) {
	nodes, err := c.lister.ByIndex(byZone, zone)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if !n.Ready {
			out = append(out, n.Node)
		}
	}
	return out, nil
}

func main() {
	server := flag.String("server", "http://127.0.0.1:8443", "URL of the node controller")
	flag.Parse()
	client, err := framework.NewClient(Contract, framework.ClientConfig{Component: "remediator", Release: "1.0.0", Endpoints: []string{*server}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := framework.NewInformerFactory(client, 30*time.Second)
	c, err := NewController(f, workqueue.DefaultTypedControllerRateLimiter[string](), func(_ context.Context, key string, h *NodeHealth) error {
		switch {
		case h == nil:
			fmt.Printf("%s: gone\n", key)
		case !h.Ready:
			fmt.Printf("%s: not ready in zone %q\n", key, h.Zone)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	f.Start(ctx)
	defer f.Shutdown()
	if err := c.Run(ctx, 2); err != nil {
		log.Print(err)
	}
}
