// Command kubelet is the sample's node agent: one process simulates many
// nodes (--nodes), each with its own lockstep session with the node
// controller, all sharing one transport and one heartbeat sender. Each node
// runs the pods the node controller assigns to it (its PodAssignment
// topic), reports its status when it changes and its pods in batches.
//
//	kubelet --listen 127.0.0.1:8440 --api v2 --nodecontroller http://127.0.0.1:8441 --nodes 100 \
//	    --node-labels topology.kubernetes.io/zone=a,disktype=ssd --register-with-taints dedicated=gpu:NoSchedule
//
// Hollow nodes at scale, each under mutual TLS with a certificate of its
// own (issued at start from --node-ca-cert and --node-ca-key, naming
// lockstep://kubelet/<node>), each reporting its whole status every 10 s:
//
//	kubelet --nodes 5000 --change-every -1 --status-every 10s --nodecontroller https://127.0.0.1:8441 \
//	    --tls-cert sim.crt --tls-key sim.key --tls-ca ca.crt --node-ca-cert ca.crt --node-ca-key ca.key
//
// It serves /healthz, /readyz (ready once every node holds a session with
// a compatible node controller), /metrics and /status, and closes its
// sessions on SIGTERM.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
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
	statusEvery := flag.Duration("status-every", 0, "report each node's whole status at least this often even when unchanged (as a kubelet's node status report frequency); 0: on change only")
	nodeCACert := flag.String("node-ca-cert", "", "with --node-ca-key: issue each node a certificate of its own from this CA, naming lockstep://kubelet/<node>, and dial with it (one connection per node; needs --tls-ca)")
	nodeCAKey := flag.String("node-ca-key", "", "PEM private key of --node-ca-cert")
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
		var nodeTLS func(string) (*tls.Config, error)
		if *nodeCACert != "" || *nodeCAKey != "" {
			if nodeTLS, err = nodeCertificates(*nodeCACert, *nodeCAKey, f.TLSCA, f.TLSServerName); err != nil {
				return nil, err
			}
		}
		k, err := kubelet.New(kubelet.Config{NodeTLS: nodeTLS, StatusEvery: *statusEvery,
			API: f.API, Fork: f.Fork, Nodes: *nodes, FirstNode: *first, NodePrefix: *prefix, Labels: nodeLabels, Taints: nodeTaints,
			ChangeEvery: *change, StartAfter: *startAfter, PodsEnd: *podsEnd, Client: base, Registerer: rt.Registry, Logger: rt.Logger,
		})
		if err != nil {
			return nil, err
		}
		return &daemon.Service{Ready: k.Ready, Status: k.Status, Run: k.Run, Close: k.Close}, nil
	}))
}

// nodeCertificates issues each node a certificate from the CA of caCert
// and caKey; the node controller's certificate must chain to the bundle
// in rootsFile and name serverName (default: the host dialled).
func nodeCertificates(caCert, caKey, rootsFile, serverName string) (func(string) (*tls.Config, error), error) {
	if caCert == "" || caKey == "" {
		return nil, errors.New("--node-ca-cert and --node-ca-key go together")
	}
	if rootsFile == "" {
		return nil, errors.New("--node-ca-cert needs --tls-ca, the bundle the node controller's certificate chains to")
	}
	ca, err := certs.LoadCA(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("--node-ca-cert/--node-ca-key: %w", err)
	}
	pem, err := os.ReadFile(rootsFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no certificate in it", rootsFile)
	}
	return kubelet.NodeCertificates(ca, roots, serverName), nil
}
