// Command scheduler is the sample's scheduler: it watches the node
// controller's NodeHealth topic and, once its cache of it synced, places
// pods (--pod-rate per second) through its extenders: filter, score,
// confirm with the node controller, bind.
//
//	scheduler --listen 127.0.0.1:8442 --api v2 --fork \
//	    --nodecontroller http://127.0.0.1:8441 \
//	    --extender 'spread=http://127.0.0.1:8443;bind;weight=1' \
//	    --extender 'legacy=http://127.0.0.1:8444/scheduler;pin=1.0.0;weight=1'
//
// --config FILE is kube-scheduler's configuration file, a
// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), decoded
// strictly; its extenders are called as kube-scheduler calls them
// (urlPrefix and verbs, weight, nodeCacheCapable, ignorable, httpTimeout,
// enableHTTPS and tlsConfig, managedResources), and the fields the sample
// does not implement are named in a warning:
//
//	scheduler --api v1 --config scheduler-config.yaml
//
// --extender is a shorthand: NAME=PEER followed by options separated by
// ';': pin=1.0.0 for a plain Kubernetes extender that does not handshake
// (PEER is then its urlPrefix), bind to have it bind pods, weight=W for its
// scores (0: no Prioritize), ignorable to go on when it fails, nodes to
// send it whole Node objects instead of names (nodeCacheCapable false),
// preempt to ask it about preemption (ProcessPreemption). A
// scheduler with --api v2 reaches 1.0.0 extenders only with --fork.
//
// --pod-template FILE is a core/v1 Pod whose labels, annotations,
// tolerations and resources other than CPU and memory every pod carries,
// so that extenders that decide by them (and those configured with
// managedResources, which are called only for pods that request one)
// have something to decide on:
//
//	scheduler --api v1 --config scheduler-config.yaml --pod-template pod.yaml
//
// It serves /healthz, /readyz, /metrics and /status, and stops on SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

func main() {
	f := daemon.NewFlags(flag.CommandLine, "scheduler", "127.0.0.1:8442", true)
	peer := flag.String("nodecontroller", "http://127.0.0.1:8441", "the node controller: "+daemon.PeerSyntax)
	var extenders daemon.ListFlag
	flag.Var(&extenders, "extender", "an extender, NAME=PEER[;pin=VERSION][;bind][;weight=W][;ignorable][;nodes][;preempt]; repeat for several")
	config := flag.String("config", "", "a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file whose extenders the scheduler calls")
	podTemplate := flag.String("pod-template", "", "a core/v1 Pod file whose labels, annotations, tolerations and extended resources every pod carries")
	rate := flag.Float64("pod-rate", 5, "pods placed per second")
	timeout := flag.Duration("call-timeout", 10*time.Second, "bound of each call, blocking for a compatible peer included")
	flag.Parse()
	os.Exit(daemon.Main(f, func(rt *daemon.Runtime) (*daemon.Service, error) {
		nodes, err := rt.ClientConfig(*peer, framework.ClientConfig{})
		if err != nil {
			return nil, err
		}
		cfg := scheduler.Config{API: f.API, Fork: f.Fork, NodeHealth: nodes, PodRate: *rate, CallTimeout: *timeout,
			Registerer: rt.Registry, Logger: rt.Logger}
		if *podTemplate != "" {
			if cfg.PodTemplate, err = scheduler.LoadPodTemplate(*podTemplate); err != nil {
				return nil, err
			}
		}
		if *config != "" {
			kc, warnings, err := scheduler.LoadConfig(*config)
			if err != nil {
				return nil, err
			}
			for _, w := range warnings {
				rt.Logger.Warn("scheduler configuration: "+w, "file", *config)
			}
			base, err := rt.ClientConfig("", framework.ClientConfig{})
			if err != nil {
				return nil, err
			}
			if cfg.Extenders, err = scheduler.ExtendersFromConfig(kc, base); err != nil {
				return nil, fmt.Errorf("%s: %w", *config, err)
			}
		}
		for _, spec := range extenders {
			ec, err := parseExtender(rt, spec)
			if err != nil {
				return nil, err
			}
			cfg.Extenders = append(cfg.Extenders, ec)
		}
		s, err := scheduler.New(cfg)
		if err != nil {
			return nil, err
		}
		return &daemon.Service{Ready: s.Ready, Status: s.Status, Run: s.Run, Close: s.Close}, nil
	}))
}

// parseExtender reads NAME=PEER[;pin=VERSION][;bind][;weight=W][;ignorable][;nodes][;preempt].
func parseExtender(rt *daemon.Runtime, spec string) (scheduler.ExtenderConfig, error) {
	parts := strings.Split(spec, ";")
	name, peer, ok := strings.Cut(parts[0], "=")
	if !ok || name == "" || peer == "" {
		return scheduler.ExtenderConfig{}, fmt.Errorf("--extender %q: want NAME=PEER[;options]", spec)
	}
	ec := scheduler.ExtenderConfig{Name: name, NodeCacheCapable: true}
	for _, opt := range parts[1:] {
		key, value, _ := strings.Cut(strings.TrimSpace(opt), "=")
		switch key {
		case "pin":
			ec.PinnedVersion = value
		case "bind":
			ec.Bind = true
		case "weight":
			w, err := strconv.ParseFloat(value, 64)
			if err != nil || w < 0 {
				return ec, fmt.Errorf("--extender %q: weight %q is not a number ≥ 0", spec, value)
			}
			ec.Weight = w
		case "ignorable":
			ec.Ignorable = true
		case "nodes":
			ec.NodeCacheCapable = false
		case "preempt":
			ec.Preempt = true
		default:
			return ec, fmt.Errorf("--extender %q: unknown option %q (want pin=VERSION, bind, weight=W, ignorable, nodes or preempt)", spec, opt)
		}
	}
	var err error
	if ec.PinnedVersion != "" {
		ec.PinnedURL = strings.TrimRight(peer, "/")
		ec.Client, err = rt.ClientConfig("", framework.ClientConfig{})
	} else {
		ec.Client, err = rt.ClientConfig(peer, framework.ClientConfig{})
	}
	return ec, err
}
