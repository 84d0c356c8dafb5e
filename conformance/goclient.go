package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

// GoClient is the framework's client as a client under test: it plays the
// client-side scenarios with framework.Client, as a Go component would.
func GoClient() ClientUnderTest {
	return func(ctx context.Context, scenario, baseURL string) (map[string]any, error) {
		c, err := Contract()
		if err != nil {
			return nil, err
		}
		handshakes := &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), changed: make(chan struct{}, 1)}
		client, err := framework.NewClient(c, framework.ClientConfig{
			Component: c.Client(), Release: "1.0.0", Instance: randomHex(8),
			Endpoints: []string{baseURL}, ReadyTimeout: 3 * time.Second,
			Transport: handshakes, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return nil, err
		}
		defer client.Close()
		switch scenario {
		case "call":
			resp, err := framework.CallUnary[Message, Message](ctx, client, "Echo", &Message{Text: "conformance"})
			if err != nil {
				return map[string]any{"error": map[string]any{"code": string(framework.CodeOf(err)), "message": err.Error()}}, nil
			}
			return map[string]any{"ok": map[string]any{"text": resp.Text}}, nil
		case "watch":
			inf, err := framework.Watch(ctx, client, "Items", framework.InformerHandlers[Item]{})
			if err != nil {
				return nil, err
			}
			defer inf.Stop()
			if err := inf.WaitForSync(ctx); err != nil {
				return nil, err
			}
			state := map[string]any{}
			for _, it := range inf.List() {
				obj := map[string]any{"name": it.Name}
				if it.Value != "" {
					obj["value"] = it.Value
				}
				state[it.Name] = obj
			}
			return map[string]any{"synced": state}, nil
		case "idle":
			if err := client.WaitReady(ctx); err != nil {
				return nil, err
			}
			for handshakes.welcomes.Load() < 2 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-handshakes.changed:
				}
			}
			return map[string]any{"handshakes": float64(handshakes.welcomes.Load())}, nil
		}
		return nil, fmt.Errorf("unknown scenario %q", scenario)
	}
}

// countingTransport counts the welcomes a client receives.
type countingTransport struct {
	base     http.RoundTripper
	welcomes atomic.Int64
	changed  chan struct{}
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && r.URL.Path == "/lockstep/handshake" && resp.StatusCode == http.StatusOK {
		t.welcomes.Add(1)
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	return resp, err
}
