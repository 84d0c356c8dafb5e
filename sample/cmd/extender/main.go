// Command extender is the sample's scheduler extender: it filters out
// nodes in a maintenance window (--maintenance) and unschedulable ones,
// scores nodes to spread the pods it binds, and binds pods.
//
//	extender --listen 127.0.0.1:8443 --api v2 --fork                # lockstep, with a handshake
//	extender --listen 127.0.0.1:8444 --api v1 --plain --url-prefix /scheduler
//
// With --plain it is a plain Kubernetes scheduler extender too: it serves
// the extender v1 protocol (extender 1.0.0) at <url-prefix>/filter,
// /prioritize and /bind without a handshake (the framework's plain
// serving), for a kube-scheduler or a lockstep scheduler that pins it to
// 1.0.0, beside the lockstep protocol. It serves /healthz, /readyz,
// /metrics and /status too, and stops gracefully on SIGTERM.
package main

import (
	"flag"
	"os"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/extender"
)

func main() {
	f := daemon.NewFlags(flag.CommandLine, "extender", "127.0.0.1:8443", true)
	plain := flag.Bool("plain", false, "serve the Kubernetes extender protocol (1.0.0) without a handshake")
	prefix := flag.String("url-prefix", "", "with --plain, the path the Kubernetes paths are under (a scheduler configuration's urlPrefix)")
	maintenance := flag.String("maintenance", "", "comma-separated nodes in a maintenance window")
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		var nodes []string
		for _, n := range strings.Split(*maintenance, ",") {
			if n = strings.TrimSpace(n); n != "" {
				nodes = append(nodes, n)
			}
		}
		e, err := extender.New(extender.Config{API: f.API, Fork: f.Fork, Plain: *plain, PlainPrefix: *prefix, Maintenance: nodes,
			Registerer: rt.Registry, Logger: rt.Logger})
		if err != nil {
			return nil, err
		}
		status := func() any {
			return map[string]any{"component": f.Component, "api": f.API, "fork": f.Fork, "plain": *plain, "bindings": e.Bindings()}
		}
		srv, err := e.Server(rt.ServerConfig(framework.ServerConfig{}))
		if err != nil {
			return nil, err
		}
		return &daemon.Service{Lockstep: srv, Status: status}, nil
	}))
}
