package v2

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/forklossy/v1"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// controller serves 2.0.0 and remembers every status it handled, so the
// tests can see that calls at 1.0.0 reached it converted.
type controller struct {
	mu   sync.Mutex
	seen []*Status
}

func (c *controller) handle(st *Status) *Ack {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, st)
	ready := false
	for _, cond := range st.Conditions {
		ready = ready || cond.Type == "Ready" && cond.Status == StatusConditionsItemStatusTrue
	}
	return &Ack{Accepted: ready, Generation: int64(len(c.seen))}
}

func (c *controller) Report(_ context.Context, st *Status) (*Ack, error) { return c.handle(st), nil }

func (c *controller) ReportMany(_ context.Context, st *Status) (*Ack, error) {
	return c.handle(st), nil
}

func (c *controller) Tag(_ context.Context, tg *Tags) (*Ack, error) {
	return &Ack{Accepted: true}, nil
}

func (c *controller) last() *Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[len(c.seen)-1]
}

// oldController serves only 1.0.0.
type oldController struct{}

func (oldController) Report(_ context.Context, st *v1.Status) (*v1.Ack, error) {
	return &v1.Ack{Ok: st.Ready && st.Address != nil && st.Labels["zone"] == "a"}, nil
}

func (oldController) ReportMany(_ context.Context, st *v1.Status) (*v1.Ack, error) {
	return &v1.Ack{Ok: st.Ready}, nil
}

func (oldController) Tag(_ context.Context, tg *v1.Tags) (*v1.Ack, error) {
	return &v1.Ack{Ok: true}, nil
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestForkedServerServesBothVersions runs a 2.0.0 server registered with
// the generated RegisterFork, over HTTP on 127.0.0.1, and calls it with a
// 1.0.0 client and a 2.0.0 client: one set of handlers serves both.
func TestForkedServerServesBothVersions(t *testing.T) {
	impl := &controller{}
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "2.0.0"},
		func(s *framework.Server) { RegisterFork(s, impl); ServeStatuses(s) })
	ctx := timeout(t)
	port := int64(10250)

	oldClient := v1.NewClient(frameworktest.NewClient(t, v1.Contract, framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{srv.URL}}))
	ack, err := oldClient.Report(ctx, &v1.Status{Node: "n1", Ready: true, Labels: map[string]string{"zone": "a"},
		Address: &v1.Address{IP: "10.0.0.1", Port: &port}})
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Ok {
		t.Errorf("1.0.0 ack = %+v", ack)
	}
	got := impl.last()
	if got.Node != "n1" || len(got.Conditions) != 1 || got.Conditions[0].Status != StatusConditionsItemStatusTrue ||
		got.Labels["zone"] != "a" || got.Address == nil || got.Address.IP != "10.0.0.1" || *got.Address.Port != 10250 {
		t.Errorf("the handler saw %+v", got)
	}
	results, err := oldClient.ReportMany(ctx, []*v1.Status{{Node: "n2", Ready: false}, {Node: "n3", Ready: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Err != nil || results[0].Value.Ok || results[1].Err != nil || !results[1].Value.Ok {
		t.Errorf("1.0.0 batch results %+v", results)
	}
	// A 1.0.0 request its schema refuses never reaches the handler.
	if _, err := oldClient.Report(ctx, &v1.Status{Node: "", Ready: true}); framework.CodeOf(err) != framework.CodeInvalidArgument {
		t.Errorf("invalid 1.0.0 request: %v", err)
	}

	newClient := NewClient(frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "2.0.0", Endpoints: []string{srv.URL}}))
	ack2, err := newClient.Report(ctx, &Status{Node: "n4", Conditions: []StatusConditionsItem{{Type: "Ready", Status: StatusConditionsItemStatusTrue}}})
	if err != nil {
		t.Fatal(err)
	}
	if !ack2.Accepted || ack2.Generation != 4 {
		t.Errorf("2.0.0 ack = %+v", ack2)
	}
}

// TestForkedClientCallsOldServer gives a 2.0.0 client the generated ForkV1
// and points it at a server that speaks only 1.0.0: its calls go down and
// the answers come back up.
func TestForkedClientCallsOldServer(t *testing.T) {
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) { v1.Register(s, oldController{}); v1.ServeStatuses(s) })
	ctx := timeout(t)
	client := NewClient(frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "2.0.0", Endpoints: []string{srv.URL}, Fork: []framework.Fork{ForkV1}}))
	ack, err := client.Report(ctx, &Status{Node: "n1", Labels: map[string]string{"zone": "a"}, Address: &Address{IP: "10.0.0.2"},
		Conditions: []StatusConditionsItem{{Type: "MemoryPressure", Status: StatusConditionsItemStatusFalse}, {Type: "Ready", Status: StatusConditionsItemStatusTrue}}})
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Accepted || ack.Generation != 0 {
		t.Errorf("ack = %+v", ack)
	}
	results, err := client.ReportMany(ctx, []*Status{{Node: "n2", Conditions: []StatusConditionsItem{}}})
	if err != nil || len(results) != 1 || results[0].Err != nil || results[0].Value.Accepted {
		t.Errorf("batch: %+v, %v", results, err)
	}
}

// TestHandWrittenConversions checks the lossy conversions on their own:
// what survives a trip down and up, and what does not.
func TestHandWrittenConversions(t *testing.T) {
	in := &Status{Node: "n", Conditions: []StatusConditionsItem{{Type: "DiskPressure", Status: StatusConditionsItemStatusTrue},
		{Type: "Ready", Status: StatusConditionsItemStatusUnknown}}}
	down, err := statusToV1(in)
	if err != nil || down.Ready || down.Node != "n" {
		t.Fatalf("down: %+v, %v", down, err)
	}
	up, err := statusFromV1(down)
	if err != nil || len(up.Conditions) != 1 || up.Conditions[0].Status != StatusConditionsItemStatusFalse {
		t.Errorf("up: %+v, %v (only readiness survives, as False)", up, err)
	}
}

// TestRenamedMemberCarried checks that the generated conversions carry a
// member codegen/diff finds renamed (ok at 1.0.0, accepted at 2.0.0, both
// required booleans) in both directions instead of dropping it.
func TestRenamedMemberCarried(t *testing.T) {
	for _, accepted := range []bool{true, false} {
		var down v1.Ack
		if err := autoConvert_v2_Ack_To_v1_Ack(&Ack{Accepted: accepted, Generation: 4}, &down); err != nil || down.Ok != accepted {
			t.Errorf("down: accepted %v became ok %v (%v)", accepted, down.Ok, err)
		}
		up := Ack{Accepted: !accepted}
		if err := autoConvert_v1_Ack_To_v2_Ack(&v1.Ack{Ok: accepted}, &up); err != nil || up.Accepted != accepted {
			t.Errorf("up: ok %v became accepted %v (%v)", accepted, up.Accepted, err)
		}
	}
}

// TestHandWrittenConversionChecked checks that a conversion written by
// hand is followed by the target's generated Validate: a converted value
// the other version's schema refuses (here a node name that is empty,
// below its minLength) is an internal error, not a message sent.
func TestHandWrittenConversionChecked(t *testing.T) {
	var out v1.Status
	err := Convert_v2_Status_To_v1_Status(&Status{Node: ""}, &out)
	if framework.CodeOf(err) != framework.CodeInternal {
		t.Fatalf("converting to an invalid v1.Status: %v (code %q), want an internal error", err, framework.CodeOf(err))
	}
	if err := Convert_v2_Status_To_v1_Status(&Status{Node: "n"}, &out); err != nil || out.Node != "n" {
		t.Errorf("a valid status: %+v, %v", out, err)
	}
}

// TestHandWrittenConversionCheckedBySchema: a message generated checks do
// not cover (Tags: uniqueItems over objects) has no Validate, so the
// conversion written by hand is followed by a check against the other
// version's schema: a node name over 1.0.0's 8 bytes is an internal
// error, and a client of 2.0.0 calling a 1.0.0 server through ForkV1 gets
// it before anything is sent.
func TestHandWrittenConversionCheckedBySchema(t *testing.T) {
	var out v1.Tags
	err := Convert_v2_Tags_To_v1_Tags(&Tags{Node: "node-with-a-long-name"}, &out)
	if framework.CodeOf(err) != framework.CodeInternal || !strings.Contains(err.Error(), "not a valid v1.Tags") {
		t.Fatalf("converting to an invalid v1.Tags: %v (code %q), want an internal error", err, framework.CodeOf(err))
	}
	in := &Tags{Node: "n", Tags: []TagsTagsItem{{Key: ptr("a")}}, Counts: map[TagsCountsKey]int64{TagsCountsKeyA: 2}}
	if err := Convert_v2_Tags_To_v1_Tags(in, &out); err != nil || out.Node != "n" || len(out.Tags) != 1 || out.Counts[v1.TagsCountsKeyA] != 2 {
		t.Errorf("valid tags: %+v, %v", out, err)
	}
	var up Tags
	if err := Convert_v1_Tags_To_v2_Tags(&out, &up); err != nil || up.Counts[TagsCountsKeyA] != 2 {
		t.Errorf("up: %+v, %v", up, err)
	}

	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) { v1.Register(s, oldController{}); v1.ServeStatuses(s) })
	client := NewClient(frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "2.0.0", Endpoints: []string{srv.URL}, Fork: []framework.Fork{ForkV1}}))
	if _, err := client.Tag(timeout(t), &Tags{Node: "node-with-a-long-name"}); framework.CodeOf(err) != framework.CodeInternal {
		t.Errorf("a call whose request converts to an invalid 1.0.0 one: %v, want an internal error", err)
	}
	if ack, err := client.Tag(timeout(t), &Tags{Node: "node-1"}); err != nil || !ack.Accepted {
		t.Errorf("a valid call: %+v, %v", ack, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDateTimeConversions checks a member that is a plain string at
// 1.0.0 and a date-time at 2.0.0: going down formats the time, going up
// parses the string, and a string that is no date-time is an error, not
// a zero time.
func TestDateTimeConversions(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 500, time.FixedZone("", 2*3600))
	down, err := ackToV1(&Ack{Accepted: true, Since: &at})
	if err != nil || down.Since == nil || *down.Since != "2026-12-01T10:00:00.0000005+02:00" {
		t.Fatalf("down: %+v, %v", down, err)
	}
	up, err := ackFromV1(down)
	if err != nil || up.Since == nil || !up.Since.Equal(at) {
		t.Errorf("up: %+v, %v, want since %v", up, err, at)
	}
	bad := "yesterday"
	if up, err := ackFromV1(&v1.Ack{Ok: true, Since: &bad}); err == nil {
		t.Errorf("up of since %q: %+v, want an error", bad, up)
	}
}

// TestForkedTopic writes the 2.0.0 form of a server-written topic that
// the generated RegisterFork also serves at 1.0.0, converted once per
// change, and watches it over HTTP on 127.0.0.1 with a 1.0.0 client.
func TestForkedTopic(t *testing.T) {
	var writer *framework.TopicWriter[Status]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "2.0.0"},
		func(s *framework.Server) {
			RegisterFork(s, &controller{})
			writer = ServeStatuses(s)
		})
	if err := writer.Set(&Status{Node: "n1", Conditions: []StatusConditionsItem{{Type: "Ready", Status: StatusConditionsItemStatusTrue}},
		Labels: map[string]string{"zone": "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Set(&Status{Node: "n2", Conditions: []StatusConditionsItem{}}); err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t)
	old, err := v1.WatchStatuses(ctx, frameworktest.NewClient(t, v1.Contract, framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{srv.URL}}), framework.InformerHandlers[v1.Status]{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	if err := old.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	got, ok := old.Get("n1")
	if !ok || !got.Ready || got.Labels["zone"] != "a" {
		t.Errorf("the 1.0.0 form is %+v, %v", got, ok)
	}
	if err := writer.Delete("n1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, ok := old.Get("n1"); return !ok && old.Len() == 1 }, "the 1.0.0 watcher to see the delete")
}

// TestForkedClientWatchesOldServer gives a 2.0.0 client the generated
// ForkV1 and watches a server that speaks only 1.0.0, over HTTP on
// 127.0.0.1: its informer holds the objects converted up.
func TestForkedClientWatchesOldServer(t *testing.T) {
	var writer *framework.TopicWriter[v1.Status]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			v1.Register(s, oldController{})
			writer = v1.ServeStatuses(s)
		})
	if err := writer.Set(&v1.Status{Node: "n1", Ready: true, Labels: map[string]string{"zone": "a"}}); err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t)
	inf, err := WatchStatuses(ctx, frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "2.0.0", Endpoints: []string{srv.URL}, Fork: []framework.Fork{ForkV1}}), framework.InformerHandlers[Status]{})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Stop()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	got, ok := inf.Get("n1")
	if !ok || len(got.Conditions) != 1 || got.Conditions[0].Type != "Ready" || got.Conditions[0].Status != StatusConditionsItemStatusTrue ||
		got.Labels["zone"] != "a" {
		t.Errorf("the 2.0.0 form is %+v, %v", got, ok)
	}
	if err := writer.Set(&v1.Status{Node: "n1", Ready: false}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		got, ok := inf.Get("n1")
		return ok && len(got.Conditions) == 1 && got.Conditions[0].Status == StatusConditionsItemStatusFalse
	}, "the change converted up")
}

// waitFor polls cond until it holds. The bound only stops a stuck run: a
// watch over real HTTP on a loaded machine may take seconds to deliver.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // between polls of a condition met over real HTTP
	}
}
