package framework

import (
	"sync"

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

// HoldPinnedLoops holds the loops of the pinned endpoints of the clients
// made with cfg until release is called (or the client closes): a test then
// sees what such a client does however late its loops first run.
func HoldPinnedLoops(cfg *ClientConfig) (release func()) {
	hold := make(chan struct{})
	cfg.holdPinnedLoops = hold
	var once sync.Once
	return func() { once.Do(func() { close(hold) }) }
}
