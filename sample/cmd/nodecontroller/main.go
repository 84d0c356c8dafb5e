// Command nodecontroller is the sample's node controller: the server of
// nodestatus (every node's kubelet reports to it; a node's liveness is its
// kubelet's session; it publishes the PodAssignment topic each kubelet
// watches) and of nodehealth (it publishes the NodeHealth topic the
// scheduler watches, answers CheckNode, and takes the scheduler's Bind).
// Its /status lists the nodes' health and the bound pods with the phases
// their kubelets reported, up to statusMaxNodes and statusMaxPods of them
// (with every one counted, and "truncated" saying what is left out).
//
//	nodecontroller --listen 127.0.0.1:8441 --api v2 [--fork] [--node-set NAME=PREFIX]
//
// With --kubeconfig it persists the user-visible subset of every node to
// that Kubernetes API server as Node objects (package nodeobjects): created
// once, their Ready condition written on every transition, and refreshed
// every --node-refresh, all within --node-writes-per-second; heartbeats and
// full statuses stay in memory. Kubernetes' own node lifecycle controller
// must then not run (kube-controller-manager --controllers=*,-nodelifecycle):
// no kubelet renews a Lease.
//
// It serves /healthz, /readyz (ready once a kubelet holds a session),
// /metrics, /status and /lockstep/status, and drains on SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockstep-dev/lockstep/framework"
	nhv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller/nodeobjects"
)

// The bounds of /status: its size is the node controller's to decide, not
// its kubelets' (one certificate's 9,000 made-up nodes made one read of it
// 303 MB and took the process to 3 GiB before nodes were owned; a large
// legitimate fleet would do the same). The counts cover every node and pod.
const (
	statusMaxNodes = 1000
	statusMaxPods  = 5000
)

func main() {
	f := daemon.NewFlags(flag.CommandLine, "nodecontroller", "127.0.0.1:8441", true)
	grace := flag.Duration("node-grace", 5*time.Second, "how long a node's kubelet may hold no session before the node is Unknown")
	ttl := flag.Duration("session-ttl", 5*time.Second, "how long a kubelet or scheduler session lives without calls or heartbeats")
	podStore := flag.String("pod-store", "", "file that keeps the bound pods across restarts (as Kubernetes keeps them in etcd); empty keeps them in memory")
	nodeSets := map[string]string{}
	flag.Func("node-set", "NAME=PREFIX: under mutual TLS, the kubelet identity lockstep://kubelet/NAME (a node simulator) reports the nodes named PREFIX…, and no other identity does; repeatable. Any other node belongs to lockstep://kubelet/<node>", func(v string) error {
		name, prefix, ok := strings.Cut(v, "=")
		if !ok || name == "" || prefix == "" {
			return fmt.Errorf("%q is not NAME=PREFIX", v)
		}
		nodeSets[name] = prefix
		return nil
	})
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a Kubernetes API server to persist the nodes' user-visible subset to, as Node objects; empty: none")
	refresh := flag.Duration("node-refresh", nodeobjects.DefaultRefreshEvery, "with --kubeconfig: how often each Node object is rewritten when nothing changed")
	writes := flag.Float64("node-writes-per-second", nodeobjects.DefaultMaxWritesPerSecond, "with --kubeconfig: the most Node writes per second, creates, transitions and refreshes together")
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		pods := nodecontroller.NewPodStore()
		if *podStore != "" {
			var err error
			if pods, err = nodecontroller.OpenPodStore(*podStore); err != nil {
				return nil, err
			}
		}
		var objects *nodeobjects.Writer
		var onHealth func(*nhv2.NodeHealth)
		if *kubeconfig != "" {
			rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
			if err != nil {
				return nil, fmt.Errorf("--kubeconfig: %w", err)
			}
			// The writer keeps its own budget: client-go's (5 per second)
			// would queue a node's transition behind the creates.
			rc.QPS, rc.Burst = float32(*writes)*2, int(*writes)*2
			core, err := corev1client.NewForConfig(rc)
			if err != nil {
				return nil, fmt.Errorf("--kubeconfig: %w", err)
			}
			if objects, err = nodeobjects.New(nodeobjects.Config{Nodes: core.Nodes(), RefreshEvery: *refresh,
				MaxWritesPerSecond: *writes, Logger: rt.Logger}); err != nil {
				return nil, err
			}
			onHealth = objects.Observe
		}
		n, err := nodecontroller.New(nodecontroller.Config{
			API: f.API, Fork: f.Fork, NodeGrace: *grace, Pods: pods, NodeSets: nodeSets, OnHealth: onHealth,
			Server:     rt.ServerConfig(framework.ServerConfig{SessionTTL: *ttl}),
			Registerer: rt.Registry, Logger: rt.Logger,
		})
		if err != nil {
			return nil, err
		}
		var run func(context.Context)
		if objects != nil {
			run = objects.Run
		}
		return &daemon.Service{
			Lockstep: n.Server(),
			Run:      run,
			Status: func() any {
				st := boundedStatus(n.Health(), n.Pods())
				st["component"], st["api"], st["fork"], st["release"] = f.Component, f.API, f.Fork, f.Release
				if objects != nil {
					s := objects.Stats()
					st["nodeObjects"] = map[string]any{"creates": s.Creates.Load(), "transitions": s.Transitions.Load(),
						"refreshes": s.Refreshes.Load(), "failures": s.Failures.Load(), "pending": objects.Pending()}
				}
				return st
			},
			Close: n.Close,
		}, nil
	}))
}

// boundedStatus is /status's list of nodes and pods, each cut to its bound
// (statusMaxNodes, statusMaxPods), with their counts and, when something
// is left out, "truncated" saying what.
func boundedStatus(nodes []nhv2.NodeHealth, pods []nodecontroller.Pod) map[string]any {
	st := map[string]any{"nodeCount": len(nodes), "podCount": len(pods)}
	var cut []string
	if len(nodes) > statusMaxNodes {
		cut = append(cut, fmt.Sprintf("%d of %d nodes", statusMaxNodes, len(nodes)))
		nodes = nodes[:statusMaxNodes]
	}
	if len(pods) > statusMaxPods {
		cut = append(cut, fmt.Sprintf("%d of %d pods", statusMaxPods, len(pods)))
		pods = pods[:statusMaxPods]
	}
	st["nodes"], st["pods"] = nodes, pods
	if cut != nil {
		st["truncated"] = "lists only " + strings.Join(cut, "; ") + ", in name order (the counts cover all)"
	}
	return st
}
