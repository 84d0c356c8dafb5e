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

type Ping struct {
	Node string `json:"node"`
}

type Pong struct {
	Seen string `json:"seen"`
}

// Example serves a contract described in Go and calls it over real HTTP on
// 127.0.0.1: the smallest working lockstep program.
func Example() {
	pingpong := framework.MustContract(handshake.Contract{
		Name: "pingpong", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"Ping": {Request: "Ping", Response: "Pong"}},
		Schemas: map[string]json.RawMessage{
			"Ping": json.RawMessage(`{"type":"object","required":["node"],"properties":{"node":{"type":"string","minLength":1}}}`),
			"Pong": json.RawMessage(`{"type":"object","required":["seen"],"properties":{"seen":{"type":"string"}}}`),
		},
	})
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Logger: frameworktest.Quiet()})
	if err != nil {
		panic(err)
	}
	framework.HandleUnary(srv, pingpong, "Ping", func(ctx context.Context, p *Ping) (*Pong, error) {
		return &Pong{Seen: p.Node}, nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()

	client, err := framework.NewClient(pingpong, framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://" + l.Addr().String()}, Logger: frameworktest.Quiet(),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pong, err := framework.CallUnary[Ping, Pong](ctx, client, "Ping", &Ping{Node: "node-1"})
	fmt.Println(pong.Seen, err)

	_, err = framework.CallUnary[Ping, Pong](ctx, client, "Ping", &Ping{Node: ""})
	fmt.Println(framework.CodeOf(err))

	client.Close()
	_ = srv.Shutdown(ctx)
	fmt.Println(<-done)
	// Output:
	// node-1 <nil>
	// invalid_argument
	// <nil>
}
