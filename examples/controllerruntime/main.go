// Command controllerruntime runs a lockstep server and a lockstep client
// inside a controller-runtime manager: both are manager.Runnables (through
// framework.Runnable), so the manager starts them with its other
// controllers and, when its context ends, drains them with the rest;
// readiness is the manager's /readyz, fed by the server's and the client's
// Healthz (healthz.Checker).
//
// The component here is a "controller" serving the nodeinfo contract to
// agents, and itself an agent of another controller (-peer), as a
// component in the middle of a control plane is.
package main

import (
	"flag"
	"log"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lockstep-dev/lockstep/examples/internal/nodeinfo"
	"github.com/lockstep-dev/lockstep/framework"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8441", "address the lockstep server serves on")
	peer := flag.String("peer", "http://127.0.0.1:8442", "URL of the controller this one reports to")
	probes := flag.String("probes", "127.0.0.1:8081", "address of the manager's /healthz and /readyz")
	flag.Parse()

	// In a cluster this is ctrl.GetConfigOrDie(); the example needs no
	// API server, since it starts no controller that watches one.
	mgr, err := newManager(&rest.Config{Host: "http://127.0.0.1:1"}, *listen, *peer, *probes)
	if err != nil {
		log.Fatal(err)
	}
	// SIGTERM or Ctrl-C ends the context: the manager stops its runnables,
	// the lockstep server drains and the client closes its sessions.
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// newManager builds the manager with the lockstep server and client added
// as runnables and their readiness as readyz checks.
func newManager(cfg *rest.Config, listen, peer, probes string) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		HealthProbeBindAddress: probes,
		Metrics:                metricsserver.Options{BindAddress: "0"}, // lockstep serves /metrics itself
	})
	if err != nil {
		return nil, err
	}
	srv, err := framework.NewServer(framework.ServerConfig{Component: "controller", Release: "1.0.0", Addr: listen})
	if err != nil {
		return nil, err
	}
	nodeinfo.Register(srv)
	client, err := framework.NewClient(nodeinfo.Contract, framework.ClientConfig{
		Component: "agent", Release: "1.0.0", Endpoints: []string{peer},
	})
	if err != nil {
		return nil, err
	}
	srv.AddClient(client) // on the status page, and in the server's readiness
	for _, r := range []framework.Runnable{srv.Run, client.Run} {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("lockstep-server", srv.Healthz); err != nil {
		return nil, err
	}
	return mgr, mgr.AddReadyzCheck("lockstep-client", client.Healthz)
}
