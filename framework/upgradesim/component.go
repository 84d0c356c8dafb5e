package upgradesim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
)

// Component is a named role of the system under test (a binary), declared
// with every version it can run and how to start each.
type Component struct {
	// Name is the component's name, e.g. "nodecontroller"; it names its
	// replicas in plans ("nodecontroller#1").
	Name string
	// Replicas is how many instances run, each at its own fixed loopback
	// address kept across restarts so clients find it again; default 1.
	Replicas int
	// Versions lists the versions the component can run, oldest first.
	Versions []Version
	// External marks a peer the system does not control, such as an
	// extender written against an old contract: random plans never
	// upgrade, restart or partition it, and none of its calls, and no call
	// to it, may fail (the fork-mode promise).
	External bool
	// SkipLedger says the component's handlers do not report the calls they
	// apply with [Env.Apply], so calls to it are not checked for loss or
	// double application.
	SkipLedger bool
}

// Version is one version of a component.
type Version struct {
	// Name is how plans name the version: "v2".
	Name string
	// Speaks lists, by contract name, the contract versions this version
	// speaks, its own first: {"nodeinfo": {"2.0.0", "1.0.0"}} for a
	// fork-mode component that still speaks 1.0.0. It is the declaration
	// the invariants hold the runtime to: a call may be processed only at
	// a version both its client and its server speak.
	Speaks map[string][]string
	// Start starts one replica at this version and returns what runs.
	// Build servers and clients from env ([Env.ServerConfig],
	// [Env.ClientConfig]) so the kit observes their calls and can cut
	// their traffic; the kit serves what Start returns on env.Addr.
	Start func(env *Env) (*Instance, error)
}

// Instance is what a started replica runs. The kit serves Server (or, for
// a component outside lockstep such as an external peer or a deliberately
// broken fake, Handler) on the replica's address, drives traffic through
// Clients, and stops all of it when the replica stops.
type Instance struct {
	// Server is the replica's lockstep server, not yet serving: the kit
	// serves it on [Env.Addr], drains it with Shutdown and kills it with
	// Close.
	Server *framework.Server
	// Handler is served instead of Server by a replica that is not a
	// lockstep server: a pinned external peer, or a fake.
	Handler http.Handler
	// Clients are the replica's lockstep clients, by the component each
	// calls; [Traffic] from this component to that one goes through it.
	Clients map[string]*framework.Client
	// Topics are the replica's views of topics, by name: for the replica
	// holding a topic, what it holds ([ViewState]); for a watcher, what its
	// informer sees ([InformerState]). [Watch] declarations compare them.
	Topics map[string]TopicState
	// Selections are the selections the replica's watchers watch with, by
	// the same names as Topics: a watcher whose informer selects
	// ([framework.Select]) declares it here, and is compared with the
	// share of the holder's objects its selection matches, not the whole
	// topic. A watcher with none declared is compared with the whole.
	Selections map[string]Selection
	// Close, if set, releases anything else once the replica stopped.
	Close func() error
}

func (c *Component) replicas() int {
	if c.Replicas <= 0 {
		return 1
	}
	return c.Replicas
}

// replicaName names replica i: the component's name alone when it has one
// replica, name#i otherwise.
func (c *Component) replicaName(i int) string {
	if c.replicas() == 1 {
		return c.Name
	}
	return Replica(c.Name, i)
}

func (c *Component) versionIndex(name string) int {
	return slices.IndexFunc(c.Versions, func(v Version) bool { return v.Name == name })
}

func (c *Component) check() error {
	if c.Name == "" || strings.ContainsAny(c.Name, "# \t") {
		return fmt.Errorf("component name %q must be non-empty, without spaces or #", c.Name)
	}
	if len(c.Versions) == 0 {
		return fmt.Errorf("component %s has no versions", c.Name)
	}
	seen := map[string]bool{}
	for _, v := range c.Versions {
		if v.Name == "" || strings.ContainsAny(v.Name, " \t") {
			return fmt.Errorf("component %s: version name %q must be non-empty, without spaces", c.Name, v.Name)
		}
		if seen[v.Name] {
			return fmt.Errorf("component %s: version %s declared twice", c.Name, v.Name)
		}
		seen[v.Name] = true
		if v.Start == nil {
			return fmt.Errorf("component %s version %s has no Start", c.Name, v.Name)
		}
	}
	return nil
}

// speaks reports whether version v of a component speaks contract version
// cv, and lists what it speaks of the contract for messages.
func speaks(v *Version, contract, cv string) bool {
	return slices.Contains(v.Speaks[contract], cv)
}

func speaksText(v *Version, contract string) string {
	vs := v.Speaks[contract]
	if len(vs) == 0 {
		return "no version of " + contract
	}
	return contract + " " + strings.Join(vs, "+")
}

// compatible reports whether two versions speak a contract version in
// common.
func compatible(a, b *Version, contract string) bool {
	for _, v := range a.Speaks[contract] {
		if slices.Contains(b.Speaks[contract], v) {
			return true
		}
	}
	return false
}

// splitTarget splits "name#i" into the name and the replica index, -1 when
// there is none.
func splitTarget(t string) (string, int, error) {
	name, idx, ok := strings.Cut(t, "#")
	if !ok {
		return t, -1, nil
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 {
		return "", 0, fmt.Errorf("%q: the replica after # must be a number", t)
	}
	return name, i, nil
}
