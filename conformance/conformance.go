// Package conformance is lockstep's conformance suite: the contract it
// speaks (contract/contract.yaml), test cases as data (cases/), the runner
// that plays them against any server over HTTP or as a scripted server
// against any client, and a reference server of the contract built on the
// framework. The lockstep-conformance command wraps it.
package conformance

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/framework"
)

//go:embed contract/contract.yaml
var contractFile []byte

//go:embed cases
var embeddedCases embed.FS

// Cases returns the suite's case files as they are built into the binary.
func Cases() fs.FS {
	sub, err := fs.Sub(embeddedCases, "cases")
	if err != nil {
		panic(err)
	}
	return sub
}

// Contract returns the conformance contract, loaded from its file the way
// lockstep-gen loads it, so that its fingerprint is the file's.
func Contract() (*framework.Contract, error) {
	c, err := contract.Parse("contract.yaml", contractFile, func(path string) ([]byte, error) {
		return nil, fmt.Errorf("the conformance contract refers to no files (asked for %s)", path)
	})
	if err != nil {
		return nil, err
	}
	return framework.NewContract(c.Handshake())
}

// The messages of the conformance contract.
type (
	// Message is {"text": …}.
	Message struct {
		Text string `json:"text"`
	}
	// Failure names the error Fail answers.
	Failure struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	}
	// Numbers are Sum's items.
	Numbers struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	// Total is Sum's result.
	Total struct {
		Sum int64 `json:"sum"`
	}
	// Item is an object of the Items topic.
	Item struct {
		Name  string `json:"name"`
		Value string `json:"value,omitempty"`
		Rank  int64  `json:"rank,omitempty"`
	}
	// Burst is what PublishMany sets: count items named prefix0,
	// prefix1…, rounds times over.
	Burst struct {
		Prefix string `json:"prefix"`
		Count  int64  `json:"count"`
		Value  string `json:"value,omitempty"`
		Rounds int64  `json:"rounds"`
	}
	// Lease is an object of the client-written Leases topic.
	Lease struct {
		Holder   string `json:"holder"`
		Renewals int64  `json:"renewals,omitempty"`
	}
)

var ok = &Message{Text: "ok"}

// Serve registers the reference implementation of the conformance
// contract on srv. drain is called by the Drain method after its answer
// is written; it should begin srv's shutdown.
func Serve(srv *framework.Server, c *framework.Contract, drain func()) {
	items := framework.ServeTopic[Item](srv, c, "Items")
	framework.ServeClientTopic[Lease](srv, c, "Leases")
	framework.HandleUnary(srv, c, "Echo", func(_ context.Context, m *Message) (*Message, error) {
		return m, nil
	})
	framework.HandleUnary(srv, c, "Fail", func(_ context.Context, f *Failure) (*Message, error) {
		return nil, framework.Errorf(framework.Code(f.Code), "%s", f.Message)
	})
	framework.HandleBatch(srv, c, "Sum", func(_ context.Context, n *Numbers) (*Total, error) {
		return &Total{Sum: n.A + n.B}, nil
	})
	framework.HandleUnary(srv, c, "Publish", func(_ context.Context, it *Item) (*Message, error) {
		return ok, items.Set(it)
	})
	// PublishMany writes faster than the topic hands changes on, so a
	// round's sets reach the fan-out together with later rounds' sets of
	// the same keys: what the revision-order case needs.
	framework.HandleUnary(srv, c, "PublishMany", func(_ context.Context, b *Burst) (*Message, error) {
		for r := int64(1); r <= b.Rounds; r++ {
			for i := range b.Count {
				if err := items.Set(&Item{Name: b.Prefix + strconv.FormatInt(i, 10), Value: b.Value, Rank: r}); err != nil {
					return nil, err
				}
			}
		}
		return ok, nil
	})
	framework.HandleUnary(srv, c, "Unpublish", func(_ context.Context, m *Message) (*Message, error) {
		return ok, items.Delete(m.Text)
	})
	framework.HandleUnary(srv, c, "Resync", func(_ context.Context, m *Message) (*Message, error) {
		if !srv.RequestResync(c.Name(), m.Text) {
			return nil, framework.Errorf(framework.CodeNotFound, "no session of instance %q", m.Text)
		}
		return ok, nil
	})
	framework.HandleUnary(srv, c, "Drain", func(ctx context.Context, _ *Message) (*Message, error) {
		// The drain begins once this answer is on its way: a drain started
		// inside the handler would wait for this very call.
		go drain()
		return ok, nil
	})
}
