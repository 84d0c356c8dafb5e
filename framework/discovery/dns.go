package discovery

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/lockstep-dev/lockstep/framework"
)

// DNS is an [framework.EndpointSource] that resolves a name through DNS and
// re-resolves it every interval: A and AAAA records of [DNSConfig].Host, or
// SRV records of [DNSConfig].Service. It reports the sorted set of endpoint
// URLs ("https://10.0.0.7:8443", "https://[fd00::7]:8443") as soon as the
// first resolution answers, and again only when the set changes.
//
// A resolution that fails keeps the last good set: the failure is logged
// and the name is asked again at the next interval. A resolution that says
// the name does not exist (NXDOMAIN) or has no such records empties the set:
// the Service was deleted or has no replicas. With a search list, the set is
// empty only when no candidate name has records. See the [discovery]
// package for the Kubernetes setting this is made for.
//
// One DNS may be the Source of many clients at once, such as the thousands
// of a node simulator: their Runs share a single resolution loop, which
// runs while at least one of them does, so the DNS server is asked once per
// interval however many clients listen.
type DNS struct {
	cfg DNSConfig

	mu   sync.Mutex
	loop *resolution // the shared loop while some Run is running
}

var _ framework.EndpointSource = (*DNS)(nil)

// NewDNS returns a DNS source for cfg, or an error saying what in cfg is
// wrong. It reads /etc/resolv.conf when cfg.Servers is empty. It sends no
// query until Run.
func NewDNS(cfg DNSConfig) (*DNS, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("lockstep: DNS discovery config: %w", err)
	}
	return &DNS{cfg: cfg}, nil
}

// Name returns the name the source resolves, as configured.
func (d *DNS) Name() string {
	if d.cfg.Host != "" {
		return d.cfg.Host
	}
	return d.cfg.Service
}

// Run reports the endpoint URLs through update, first when they are known
// and then on every change, until ctx ends. Each call of update gets a list
// of its own. Run returns once ctx has ended, after the shared loop has
// stopped if this was its last listener.
func (d *DNS) Run(ctx context.Context, update func(urls []string)) {
	r := d.join()
	defer d.leave(r)
	var sent []string
	sentAny := false
	for {
		urls, known, changed := r.current()
		if known && (!sentAny || !slices.Equal(urls, sent)) {
			update(slices.Clone(urls))
			sent, sentAny = urls, true
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// join returns the running loop, starting it for the first listener.
func (d *DNS) join() *resolution {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.loop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		d.loop = &resolution{cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
		go d.run(ctx, d.loop)
	}
	d.loop.listeners++
	return d.loop
}

// leave stops the loop when its last listener leaves, and waits for it.
// A Run that starts meanwhile starts a loop of its own.
func (d *DNS) leave(r *resolution) {
	d.mu.Lock()
	r.listeners--
	last := r.listeners == 0
	if last {
		d.loop = nil
	}
	d.mu.Unlock()
	if last {
		r.cancel()
		<-r.done
	}
}

// resolution is one running resolution loop and the set it last found.
type resolution struct {
	cancel    context.CancelFunc
	done      chan struct{} // closed when the loop has returned
	listeners int           // guarded by DNS.mu

	mu      sync.Mutex
	urls    []string      // the last good set, never modified once stored
	known   bool          // whether any resolution has succeeded
	changed chan struct{} // closed and replaced when urls change
}

func (r *resolution) current() (urls []string, known bool, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.urls, r.known, r.changed
}

// store records a successful resolution's set and reports whether it
// differs from the previous one.
func (r *resolution) store(urls []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known && slices.Equal(r.urls, urls) {
		return false
	}
	r.urls, r.known = urls, true
	close(r.changed)
	r.changed = make(chan struct{})
	return true
}

// run resolves, publishes and waits an interval, until ctx ends.
func (d *DNS) run(ctx context.Context, r *resolution) {
	defer close(r.done)
	log := d.cfg.Logger.With("name", d.Name())
	failures := 0
	for {
		urls, err := d.resolve(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			failures++
			if failures == 1 {
				log.Warn("lockstep: DNS discovery failed; keeping the last endpoints and retrying", "err", err,
					"retry_in", d.cfg.Interval)
			} else {
				log.Debug("lockstep: DNS discovery failed again", "err", err, "failures", failures)
			}
		default:
			if failures > 0 {
				log.Info("lockstep: DNS discovery recovered", "failures", failures)
				failures = 0
			}
			previous, known, _ := r.current()
			if r.store(urls) {
				added, removed := difference(previous, urls)
				log.Info("lockstep: DNS discovery found new endpoints", "endpoints", urls,
					"added", added, "removed", removed, "first", !known)
			}
		}
		timer := d.cfg.Clock.NewTimer(d.cfg.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		}
	}
}

// difference returns what after has that before has not, and the reverse;
// both lists are sorted.
func difference(before, after []string) (added, removed []string) {
	for _, u := range after {
		if _, found := slices.BinarySearch(before, u); !found {
			added = append(added, u)
		}
	}
	for _, u := range before {
		if _, found := slices.BinarySearch(after, u); !found {
			removed = append(removed, u)
		}
	}
	return added, removed
}
