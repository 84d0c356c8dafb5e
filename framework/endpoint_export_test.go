package framework

import (
	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/probe"
)

// UseOwnProbers gives the clients made with cfg probers of their own, on
// clock, dialling for real: a test can then wait for the prober on a fake
// clock without touching the process's. dials counts their dials of the
// endpoint URL.
func UseOwnProbers(cfg *ClientConfig, clock clockwork.Clock) (dials func(url string) int64) {
	p := probe.NewTable(clock, probe.Dial)
	cfg.probers = p
	return func(url string) int64 { return p.StatsOf(dialAddr(url)).Dials.Load() }
}
