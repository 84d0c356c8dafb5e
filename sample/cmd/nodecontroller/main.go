// Command nodecontroller is the sample's node controller: the server of
// nodestatus (every node's kubelet reports to it; a node's liveness is its
// kubelet's session) and of nodehealth (it publishes the NodeHealth topic
// the scheduler watches, and answers CheckNode).
//
//	nodecontroller --listen 127.0.0.1:8441 --api v2 [--fork]
//
// It serves /healthz, /readyz (ready once a kubelet holds a session),
// /metrics, /status and /lockstep/status, and drains on SIGTERM.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/nodecontroller"
)

func main() {
	f := daemon.NewFlags(flag.CommandLine, "nodecontroller", "127.0.0.1:8441", true)
	grace := flag.Duration("node-grace", 5*time.Second, "how long a node's kubelet may hold no session before the node is Unknown")
	ttl := flag.Duration("session-ttl", 5*time.Second, "how long a kubelet or scheduler session lives without calls or heartbeats")
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		n, err := nodecontroller.New(nodecontroller.Config{
			API: f.API, Fork: f.Fork, NodeGrace: *grace,
			Server:     rt.ServerConfig(framework.ServerConfig{SessionTTL: *ttl}),
			Registerer: rt.Registry, Logger: rt.Logger,
		})
		if err != nil {
			return nil, err
		}
		return &daemon.Service{
			Lockstep: n.Server(),
			Status: func() any {
				return map[string]any{"component": f.Component, "api": f.API, "fork": f.Fork, "release": f.Release, "nodes": n.Health()}
			},
			Close: n.Close,
		}, nil
	}))
}
