// Command quickstart is the smallest working lockstep program: a contract
// described in Go, a server that serves it on 127.0.0.1:8080, and a client
// that calls it. The server keeps running afterwards so you can curl it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Ping is the request of pingpong's Ping: the node that pings.
type Ping struct {
	Node string `json:"node"`
}

// Pong is Ping's answer: the node the server saw.
type Pong struct {
	Seen string `json:"seen"`
}

var pingpong = framework.MustContract(handshake.Contract{
	Name: "pingpong", Version: "1.0.0", Server: "nodecontroller", Client: "kubelet",
	Methods: map[string]handshake.Method{"Ping": {Request: "Ping", Response: "Pong"}},
	Schemas: map[string]json.RawMessage{
		"Ping": json.RawMessage(`{"type":"object","required":["node"],"properties":{"node":{"type":"string","minLength":1}}}`),
		"Pong": json.RawMessage(`{"type":"object","required":["seen"],"properties":{"seen":{"type":"string"}}}`),
	},
})

func main() {
	// Ctrl-C or SIGTERM ends ctx: the server drains, the client closes.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.0.0", Addr: "127.0.0.1:8080"})
	if err != nil {
		log.Fatal(err)
	}
	framework.HandleUnary(srv, pingpong, "Ping", func(ctx context.Context, p *Ping) (*Pong, error) {
		return &Pong{Seen: p.Node}, nil
	})
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()

	client, err := framework.NewClient(pingpong, framework.ClientConfig{
		Component: "kubelet", Release: "1.0.0", Endpoints: []string{"http://127.0.0.1:8080"},
	})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = client.Run(ctx) }()
	// Blocks until the server is up and agrees on pingpong 1.0.0.
	pong, err := framework.CallUnary[Ping, Pong](ctx, client, "Ping", &Ping{Node: "node-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodecontroller saw", pong.Seen)
	fmt.Println("pingpong 1.0.0 fingerprint:", pingpong.Fingerprint())
	// Keep serving for curl until interrupted.
	if err := <-served; err != nil {
		log.Fatal(err)
	}
}
