package nodestatus

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// controller is a Server implementation that remembers what it was sent.
type controller struct {
	mu    sync.Mutex
	nodes map[string]*NodeStatus
	pods  []string
}

func (c *controller) ReportStatus(_ context.Context, req *NodeStatus) (*Ack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[req.NodeName] = req
	return &Ack{Accepted: true, Generation: int64(len(c.nodes))}, nil
}

func (c *controller) ReportBench(_ context.Context, req *BenchNodeStatus) (*Ack, error) {
	if req.NodeName == "refuse" {
		return nil, framework.Errorf(framework.CodeConflict, "node %s is being replaced", req.NodeName)
	}
	return &Ack{Accepted: true}, nil
}

func (c *controller) ReportPodStatuses(_ context.Context, req *PodStatus) (*Ack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods = append(c.pods, req.UID)
	return &Ack{Accepted: req.Phase != PodStatusPhaseUnknown}, nil
}

// TestClientServerOverHTTP runs the generated client against the generated
// server through the runtime, over HTTP on 127.0.0.1.
func TestClientServerOverHTTP(t *testing.T) {
	impl := &controller{nodes: map[string]*NodeStatus{}}
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) { Register(s, impl); ServeNodeHealth(s) })
	cl := frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var client Client = NewClient(cl)

	var status NodeStatus
	if err := json.Unmarshal([]byte(k8sStatus), &status); err != nil {
		t.Fatal(err)
	}
	ack, err := client.ReportStatus(ctx, &status)
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Accepted || ack.Generation != 1 {
		t.Errorf("ack = %+v", ack)
	}
	got := impl.nodes["node-7"]
	if got == nil || !got.Phase.IsNull() || !got.VolumesInUse.IsNull() || got.Capacity["cpu"] != "4" {
		t.Errorf("the server saw %+v", got)
	}
	sent, _ := json.Marshal(&status)
	seen, _ := json.Marshal(got)
	if string(sent) != string(seen) {
		t.Errorf("the message changed on the way:\nsent %s\nseen %s", sent, seen)
	}

	// A request the schema refuses never reaches the handler.
	_, err = client.ReportStatus(ctx, &NodeStatus{NodeName: ""})
	if framework.CodeOf(err) != framework.CodeInvalidArgument {
		t.Errorf("invalid request: %v", err)
	}

	// A handler's coded error reaches the caller with its code.
	_, err = client.ReportBench(ctx, &BenchNodeStatus{NodeName: "refuse", Conditions: []NodeCondition{}, Capacity: ResourceList{},
		Allocatable: ResourceList{}, Addresses: []NodeAddress{}, Images: []string{}})
	var fe *framework.Error
	if !errors.As(err, &fe) || fe.Code() != framework.CodeConflict {
		t.Errorf("handler error: %v", err)
	}

	// Batch: one result per item, in order, an invalid item refused alone.
	results, err := client.ReportPodStatuses(ctx, []*PodStatus{
		{UID: "a", Phase: PodStatusPhaseRunning},
		{UID: "b", Phase: "Exploded"},
		{UID: "c", Phase: PodStatusPhaseUnknown},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[0].Err != nil || !results[0].Value.Accepted ||
		framework.CodeOf(results[1].Err) != framework.CodeInvalidArgument || results[2].Err != nil || results[2].Value.Accepted {
		t.Errorf("batch results: %+v", results)
	}
	if len(impl.pods) != 2 || impl.pods[0] != "a" || impl.pods[1] != "c" {
		t.Errorf("the handler saw pods %v", impl.pods)
	}
}

// fakeClient shows that users can fake the generated Client in their tests.
type fakeClient struct{ Client }

func (fakeClient) ReportStatus(context.Context, *NodeStatus, ...framework.CallOption) (*Ack, error) {
	return &Ack{Accepted: true}, nil
}

func TestFakeClient(t *testing.T) {
	var c Client = fakeClient{}
	ack, err := c.ReportStatus(context.Background(), &NodeStatus{})
	if err != nil || !ack.Accepted {
		t.Errorf("fake: %v %v", ack, err)
	}
}
