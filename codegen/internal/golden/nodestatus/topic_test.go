package nodestatus

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// TestTopicHelpersOverHTTP publishes NodeHealth through the generated
// ServeNodeHealth writer and watches it through WatchNodeHealth, over HTTP
// on 127.0.0.1.
func TestTopicHelpersOverHTTP(t *testing.T) {
	var health *framework.TopicWriter[NodeStatus]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0"},
		func(s *framework.Server) {
			Register(s, &controller{nodes: map[string]*NodeStatus{}})
			health = ServeNodeHealth(s)
		})
	cl := frameworktest.NewClient(t, Contract, framework.ClientConfig{
		Component: "kubelet", Release: "1.31.0", Endpoints: []string{srv.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var status NodeStatus
	if err := json.Unmarshal([]byte(k8sStatus), &status); err != nil {
		t.Fatal(err)
	}
	if err := health.Set(&status); err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 1)
	inf, err := WatchNodeHealth(ctx, cl, framework.InformerHandlers[NodeStatus]{
		OnAdd: func(key string, _ *NodeStatus) { added <- key },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Stop()
	select {
	case key := <-added:
		if key != status.NodeName {
			t.Fatalf("watched key %q, want %q", key, status.NodeName)
		}
	case <-ctx.Done():
		t.Fatal("the watcher never saw the published status")
	}
	got, ok := inf.Get(status.NodeName)
	if !ok || got.NodeName != status.NodeName {
		t.Fatalf("informer holds %+v, %v", got, ok)
	}
	if TopicNodeHealth != "NodeHealth" {
		t.Fatalf("TopicNodeHealth = %q", TopicNodeHealth)
	}
}
