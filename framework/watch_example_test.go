package framework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

type NodeHealth struct {
	Node  string `json:"node"`
	Ready bool   `json:"ready"`
}

// ExampleWatch publishes a topic from a server and watches it from a
// client over real HTTP on 127.0.0.1: the informer's cache follows the
// writer, and its handlers see each change.
func ExampleWatch() {
	health := framework.MustContract(handshake.Contract{
		Name: "nodehealth", Version: "1.0.0", Server: "nodecontroller", Client: "scheduler",
		Topics: map[string]handshake.Topic{
			"NodeHealth": {Object: "NodeHealth", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
		},
		Schemas: map[string]json.RawMessage{
			"NodeHealth": json.RawMessage(`{"type":"object","required":["node","ready"],"properties":{"node":{"type":"string"},"ready":{"type":"boolean"}}}`),
		},
	})
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Logger: frameworktest.Quiet()})
	if err != nil {
		panic(err)
	}
	writer := framework.ServeTopic[NodeHealth](srv, health, "NodeHealth")
	_ = writer.Set(&NodeHealth{Node: "node-1", Ready: true})
	_ = writer.Set(&NodeHealth{Node: "node-2", Ready: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()

	client, err := framework.NewClient(health, framework.ClientConfig{
		Component: "scheduler", Release: "1.0.0", Endpoints: []string{"http://" + l.Addr().String()}, Logger: frameworktest.Quiet(),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	changes := make(chan string, 10)
	inf, err := framework.Watch(ctx, client, "NodeHealth", framework.InformerHandlers[NodeHealth]{
		OnUpdate: func(key string, old, new *NodeHealth) {
			changes <- fmt.Sprintf("%s ready %v → %v", key, old.Ready, new.Ready)
		},
		OnDelete: func(key string, _ *NodeHealth) { changes <- key + " deleted" },
	})
	if err != nil {
		panic(err)
	}
	_ = inf.WaitForSync(ctx)
	fmt.Println(inf.Keys())

	_ = writer.Set(&NodeHealth{Node: "node-2", Ready: false})
	fmt.Println(<-changes)
	_ = writer.Delete("node-1")
	fmt.Println(<-changes)
	fmt.Println(inf.Keys())

	inf.Stop()
	client.Close()
	_ = srv.Shutdown(ctx)
	fmt.Println(<-done)
	// Output:
	// [node-1 node-2]
	// node-2 ready true → false
	// node-1 deleted
	// [node-2]
	// <nil>
}
