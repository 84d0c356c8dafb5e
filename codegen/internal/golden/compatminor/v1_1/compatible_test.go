package v1_1

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/compatminor/v1_0"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// journal records what a controller's handlers received, one line a call.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// controllerV11 implements 1.1.0; it answers every grant with an expiry.
type controllerV11 struct{ j *journal }

var expiry = time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)

func (c controllerV11) RequestGrant(_ context.Context, r *GrantRequest) (*Grant, error) {
	c.j.add("1.1.0 RequestGrant %s %d priority=%t", r.Tenant, r.Amount, r.Priority != nil)
	return &Grant{ID: "g-" + r.Tenant, Tenant: r.Tenant, Amount: r.Amount, Expires: &expiry}, nil
}

func (c controllerV11) ReportUsage(_ context.Context, u *Usage) (*Ack, error) {
	c.j.add("1.1.0 ReportUsage %s %d zone=%t", u.Tenant, u.Used, u.Zone != nil)
	return &Ack{Accepted: true}, nil
}

func (c controllerV11) Revoke(_ context.Context, g *Grant) (*Ack, error) {
	c.j.add("1.1.0 Revoke %s", g.ID)
	return &Ack{Accepted: true}, nil
}

// controllerV10 implements 1.0.0.
type controllerV10 struct{ j *journal }

func (c controllerV10) RequestGrant(_ context.Context, r *v1_0.GrantRequest) (*v1_0.Grant, error) {
	c.j.add("1.0.0 RequestGrant %s %d", r.Tenant, r.Amount)
	return &v1_0.Grant{ID: "g-" + r.Tenant, Tenant: r.Tenant, Amount: r.Amount}, nil
}

func (c controllerV10) ReportUsage(_ context.Context, u *v1_0.Usage) (*v1_0.Ack, error) {
	c.j.add("1.0.0 ReportUsage %s %d extra=%d", u.Tenant, u.Used, len(u.AdditionalProperties))
	return &v1_0.Ack{Accepted: true}, nil
}

func serverConfig() framework.ServerConfig {
	return framework.ServerConfig{Component: "controller", Release: "1.0.0", Logger: frameworktest.Quiet()}
}

func clientConfig(url string) framework.ClientConfig {
	return framework.ClientConfig{Component: "agent", Release: "1.0.0", Endpoints: []string{url}, Logger: frameworktest.Quiet()}
}

// agreed returns the versions the server's sessions agreed on.
func agreed(srv *frameworktest.Running) []string {
	var out []string
	for _, s := range srv.Server.Sessions() {
		out = append(out, s.Version)
	}
	return out
}

func TestContractSpeaksTheVersionItDerivesFrom(t *testing.T) {
	if got := Contract.Compatible(); len(got) != 1 || got[0] != v1_0.Contract {
		t.Fatalf("Compatible() = %v, want [1.0.0]", got)
	}
	if got := v1_0.Contract.Compatible(); len(got) != 0 {
		t.Errorf("1.0.0 derives from nothing, Compatible() = %v", got)
	}
}

// TestNewClientCallsOldServer runs a 1.1.0 agent against a 1.0.0
// controller over HTTP on 127.0.0.1, each built with its own generated
// package and nothing else (no fork mode): the session agrees on 1.0.0,
// the members 1.0.0 lacks are dropped going down and absent coming up,
// and Revoke, which 1.0.0 lacks, is never sent.
func TestNewClientCallsOldServer(t *testing.T) {
	var j journal
	srv := frameworktest.StartServer(t, serverConfig(), func(s *framework.Server) { v1_0.Register(s, controllerV10{&j}); v1_0.ServeGrants(s) })
	agent := NewClient(frameworktest.NewClient(t, Contract, clientConfig(srv.URL)))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	priority := int64(3)
	g, err := agent.RequestGrant(ctx, &GrantRequest{Tenant: "t1", Amount: 5, Priority: &priority})
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != "g-t1" || g.Amount != 5 || g.Expires != nil {
		t.Errorf("grant %+v: want g-t1, 5, no expiry (1.0.0 has none)", g)
	}
	zone := "z1"
	results, err := agent.ReportUsage(ctx, []*Usage{{Tenant: "t1", Used: 2, Zone: &zone}, {Tenant: "t2", Used: 0}})
	if err != nil || len(results) != 2 || results[0].Err != nil || !results[1].Value.Accepted {
		t.Fatalf("report usage: %+v, %v", results, err)
	}
	if _, err := agent.Revoke(ctx, g, framework.FailFast()); err == nil {
		t.Error("Revoke reached a 1.0.0 controller, which does not declare it")
	}
	// GrantRequest is closed in 1.0.0, which refuses a priority: the
	// conversion down dropped it. Usage is open: the zone is dropped too,
	// not passed on as a member 1.0.0 does not declare.
	want := []string{"1.0.0 RequestGrant t1 5", "1.0.0 ReportUsage t1 2 extra=0", "1.0.0 ReportUsage t2 0 extra=0"}
	if got := j.all(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the 1.0.0 controller received %q, want %q", got, want)
	}
	if got := agreed(srv); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("sessions agreed on %v, want [1.0.0]", got)
	}
}

// TestOldClientCallsNewServer runs a 1.0.0 agent against a 1.1.0
// controller registered with the generated Register alone: the 1.1.0
// handlers serve it, seeing the new members absent, and their answers
// reach it without them (a Grant is closed in 1.0.0: the agent would
// refuse one with an expiry).
func TestOldClientCallsNewServer(t *testing.T) {
	var j journal
	srv := frameworktest.StartServer(t, serverConfig(), func(s *framework.Server) { Register(s, controllerV11{&j}); ServeGrants(s) })
	agent := v1_0.NewClient(frameworktest.NewClient(t, v1_0.Contract, clientConfig(srv.URL)))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	g, err := agent.RequestGrant(ctx, &v1_0.GrantRequest{Tenant: "t1", Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != "g-t1" || g.Amount != 5 {
		t.Errorf("grant %+v: want g-t1, 5", g)
	}
	results, err := agent.ReportUsage(ctx, []*v1_0.Usage{{Tenant: "t1", Used: 2}})
	if err != nil || len(results) != 1 || !results[0].Value.Accepted {
		t.Fatalf("report usage: %+v, %v", results, err)
	}
	want := []string{"1.1.0 RequestGrant t1 5 priority=false", "1.1.0 ReportUsage t1 2 zone=false"}
	if got := j.all(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the 1.1.0 controller received %q, want %q", got, want)
	}
	if got := agreed(srv); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("sessions agreed on %v, want [1.0.0]", got)
	}
}

// TestOldWatcherOfNewServer watches a 1.1.0 controller's Grants topic from
// a 1.0.0 agent selecting its tenant: the controller serves the 1.0.0
// form, converted down once per change, through the generated ServeGrants
// alone.
func TestOldWatcherOfNewServer(t *testing.T) {
	var grants *framework.TopicWriter[Grant]
	srv := frameworktest.StartServer(t, serverConfig(), func(s *framework.Server) {
		Register(s, controllerV11{&journal{}})
		grants = ServeGrants(s)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	inf, err := v1_0.WatchGrants(ctx, frameworktest.NewClient(t, v1_0.Contract, clientConfig(srv.URL)),
		framework.InformerHandlers[v1_0.Grant]{}, v1_0.SelectTenant("t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Stop()
	for _, g := range []*Grant{
		{ID: "a", Tenant: "t1", Amount: 1, Expires: &expiry},
		{ID: "b", Tenant: "t2", Amount: 2},
		{ID: "c", Tenant: "t1", Amount: 3},
	} {
		if err := grants.Set(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := grants.Delete("c"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, ok := inf.Get("a")
		if ok && inf.Len() == 1 && a.Amount == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 1.0.0 watcher holds %d grants, a = %+v", inf.Len(), a)
		}
		time.Sleep(10 * time.Millisecond) // waits for the watch stream, in real time
	}
}

// TestNewWatcherOfOldServer watches a 1.0.0 controller's Grants topic from
// a 1.1.0 agent selecting its tenant, with no fork mode: the agent's
// informer holds the 1.1.0 form, converted up by the generated
// conversions, with the expiry 1.0.0 lacks absent.
func TestNewWatcherOfOldServer(t *testing.T) {
	var grants *framework.TopicWriter[v1_0.Grant]
	srv := frameworktest.StartServer(t, serverConfig(), func(s *framework.Server) {
		v1_0.Register(s, controllerV10{&journal{}})
		grants = v1_0.ServeGrants(s)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	inf, err := WatchGrants(ctx, frameworktest.NewClient(t, Contract, clientConfig(srv.URL)),
		framework.InformerHandlers[Grant]{}, SelectTenant("t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Stop()
	for _, g := range []*v1_0.Grant{{ID: "a", Tenant: "t1", Amount: 1}, {ID: "b", Tenant: "t2", Amount: 2}, {ID: "c", Tenant: "t1", Amount: 3}} {
		if err := grants.Set(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := grants.Delete("a"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, ok := inf.Get("c")
		if ok && inf.Len() == 1 && c.Amount == 3 && c.Expires == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 1.1.0 watcher holds %d grants, c = %+v", inf.Len(), c)
		}
		time.Sleep(10 * time.Millisecond) // waits for the watch stream, in real time
	}
	if got := agreed(srv); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("sessions agreed on %v, want [1.0.0]", got)
	}
}
