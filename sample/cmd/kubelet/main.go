// Command kubelet is the sample's node agent: one process simulates many
// nodes (--nodes), each with its own lockstep session with the node
// controller, all sharing one transport and one heartbeat sender. Each node
// runs the pods the node controller assigns to it (its PodAssignment
// topic), reports its status when it changes and its pods in batches.
//
//	kubelet --listen 127.0.0.1:8440 --api v2 --nodecontroller http://127.0.0.1:8441 --nodes 100 \
//	    --node-labels topology.kubernetes.io/zone=a,disktype=ssd --register-with-taints dedicated=gpu:NoSchedule
//
// It serves /healthz, /readyz (ready once every node holds a session with
// a compatible node controller), /metrics and /status, and closes its
// sessions on SIGTERM.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/kubelet"
)

func main() {
	f := daemon.NewFlags(flag.CommandLine, "kubelet", "127.0.0.1:8440", true)
	peer := flag.String("nodecontroller", "http://127.0.0.1:8441", "the node controller: "+daemon.PeerSyntax)
	nodes := flag.Int("nodes", 10, "nodes to simulate, each with its own session")
	first := flag.Int("first-node", 0, "number of the first node (node-000 and on), to split nodes over several processes")
	prefix := flag.String("node-prefix", "node-", "prefix of node names")
	change := flag.Duration("change-every", 2*time.Second, "mean time between simulated changes of a node; negative for none")
	startAfter := flag.Duration("start-after", 100*time.Millisecond, "how long an assigned pod stays Pending before it runs")
	podsEnd := flag.Bool("pods-end", false, "running pods end now and then among the simulated changes (reported Succeeded), as a batch job's do")
	labels := flag.String("node-labels", "", "labels every node registers with, comma-separated key=value (as the kubelet's --node-labels)")
	taints := flag.String("register-with-taints", "", "taints every node registers with, comma-separated key[=value]:effect (as the kubelet's --register-with-taints)")
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		base, err := rt.ClientConfig(*peer, framework.ClientConfig{})
		if err != nil {
			return nil, err
		}
		nodeLabels, err := kubelet.ParseNodeLabels(*labels)
		if err != nil {
			return nil, err
		}
		nodeTaints, err := kubelet.ParseTaints(*taints)
		if err != nil {
			return nil, err
		}
		k, err := kubelet.New(kubelet.Config{
			API: f.API, Fork: f.Fork, Nodes: *nodes, FirstNode: *first, NodePrefix: *prefix, Labels: nodeLabels, Taints: nodeTaints,
			ChangeEvery: *change, StartAfter: *startAfter, PodsEnd: *podsEnd, Client: base, Registerer: rt.Registry, Logger: rt.Logger,
		})
		if err != nil {
			return nil, err
		}
		return &daemon.Service{Ready: k.Ready, Status: k.Status, Run: k.Run, Close: k.Close}, nil
	}))
}
