// Command nodecontroller is the sample's node controller: the server of
// nodestatus (every node's kubelet reports to it; a node's liveness is its
// kubelet's session; it publishes the PodAssignment topic each kubelet
// watches) and of nodehealth (it publishes the NodeHealth topic the
// scheduler watches, answers CheckNode, and takes the scheduler's Bind).
// Its /status lists every bound pod with the phases its kubelet reported.
//
//	nodecontroller --listen 127.0.0.1:8441 --api v2 [--fork] [--node-set NAME=PREFIX]
//
// It serves /healthz, /readyz (ready once a kubelet holds a session),
// /metrics, /status and /lockstep/status, and drains on SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
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
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		pods := nodecontroller.NewPodStore()
		if *podStore != "" {
			var err error
			if pods, err = nodecontroller.OpenPodStore(*podStore); err != nil {
				return nil, err
			}
		}
		n, err := nodecontroller.New(nodecontroller.Config{
			API: f.API, Fork: f.Fork, NodeGrace: *grace, Pods: pods, NodeSets: nodeSets,
			Server:     rt.ServerConfig(framework.ServerConfig{SessionTTL: *ttl}),
			Registerer: rt.Registry, Logger: rt.Logger,
		})
		if err != nil {
			return nil, err
		}
		return &daemon.Service{
			Lockstep: n.Server(),
			Status: func() any {
				return map[string]any{"component": f.Component, "api": f.API, "fork": f.Fork, "release": f.Release, "nodes": n.Health(), "pods": n.Pods()}
			},
			Close: n.Close,
		}, nil
	}))
}
