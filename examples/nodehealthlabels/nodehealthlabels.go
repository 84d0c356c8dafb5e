// Package nodehealthlabels is a controller-runtime controller whose input
// is a lockstep topic: a health service publishes each node's health on
// its NodeHealth topic, and the controller keeps every Kubernetes Node's
// label lockstep.dev/health equal to it (ready, not-ready, or unknown for
// a node the topic does not hold).
//
// The controller is an ordinary one: it reconciles Nodes from the
// manager's cache and patches them. What is not ordinary is its second
// source of events: the topic's shared informer, whose changes are turned
// into requests for the node they name through a source.Channel, so that
// a change of health is reconciled within the topic's delivery latency,
// with no polling. The lockstep client is one more runnable of the
// manager, closed with it.
//
// Its Kubernetes identity needs get, list, watch and patch on nodes.
package nodehealthlabels

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Contract is the health service's contract: one topic, NodeHealth, keyed
// by node name and written by the server.
var Contract = framework.MustContract(handshake.Contract{
	Name: "nodehealth", Version: "1.0.0", Server: "healthservice", Client: "labeler",
	Methods: map[string]handshake.Method{},
	Topics: map[string]handshake.Topic{"NodeHealth": {Object: "NodeHealth", Key: "node",
		Writer: handshake.RoleServer, LostWriter: handshake.LostWriterKeep}},
	Schemas: map[string]json.RawMessage{
		"NodeHealth": json.RawMessage(`{"type":"object","additionalProperties":false,"required":["node","ready"],
			"properties":{"node":{"type":"string","minLength":1},"ready":{"type":"boolean"},"reason":{"type":"string"}}}`),
	},
})

// Topic is the name of the health topic.
const Topic = "NodeHealth"

// NodeHealth is one node's health as the topic carries it.
type NodeHealth struct {
	Node   string `json:"node"`
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// Label is the label the controller keeps on each Node, and its values.
const (
	Label    = "lockstep.dev/health"
	Ready    = "ready"
	NotReady = "not-ready"
	Unknown  = "unknown"
)

// Reconciler sets a Node's label from the topic.
type Reconciler struct {
	Client client.Client
	Health *framework.SharedInformer[NodeHealth]
}

// Reconcile makes the Node's label say what the topic says of it. Until
// the topic's informer has synced it knows nothing, and the request is
// tried again shortly rather than labelled unknown.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !r.Health.HasSynced() {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	want := Unknown
	if h, ok := r.Health.Lister().Get(node.Name); ok {
		want = NotReady
		if h.Ready {
			want = Ready
		}
	}
	if node.Labels[Label] == want {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[Label] = want
	return reconcile.Result{}, r.Client.Patch(ctx, &node, patch)
}

// Setup adds the controller to mgr, with lc (a client of [Contract]) and
// its topic informer as runnables of the manager.
func Setup(mgr manager.Manager, lc *framework.Client) error {
	factory := framework.NewInformerFactory(lc, 0)
	health, err := framework.ForTopic[NodeHealth](factory, Topic)
	if err != nil {
		return err
	}
	// Each change names a node; the controller's queue merges repeats.
	// Once the manager stops, nothing reads them: the handlers then drop
	// them rather than hold the informer's goroutine.
	changes := make(chan event.TypedGenericEvent[string], 1024)
	stopped := make(chan struct{})
	send := func(key string) {
		select {
		case changes <- event.TypedGenericEvent[string]{Object: key}:
		case <-stopped:
		}
	}
	health.AddEventHandler(framework.InformerHandlers[NodeHealth]{
		OnAdd:    func(key string, _ *NodeHealth) { send(key) },
		OnUpdate: func(key string, _, _ *NodeHealth) { send(key) },
		OnDelete: func(key string, _ *NodeHealth) { send(key) },
	})
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		factory.Start(ctx)
		<-ctx.Done()
		close(stopped)
		factory.Shutdown()
		return nil
	}))
	if err != nil {
		return err
	}
	if err := mgr.Add(framework.Runnable(lc.Run)); err != nil {
		return err
	}
	byName := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, node string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: node}}}
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("nodehealthlabels").
		For(&corev1.Node{}).
		WatchesRawSource(source.Channel(changes, byName)).
		Complete(&Reconciler{Client: mgr.GetClient(), Health: health})
	if err != nil {
		return fmt.Errorf("nodehealthlabels: %w", err)
	}
	return nil
}
