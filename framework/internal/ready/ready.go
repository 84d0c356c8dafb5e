// Package ready says whether a server is ready to be sent calls, and
// answers the health paths: /readyz with what keeps it from being ready
// (its drain, a required peer without a live session, a named check that
// fails), /healthz and /livez with the process serving at all.
//
// It is separate because readiness is one rule that the health paths,
// the status page and controller-runtime's checker all read, and that
// knows nothing of contracts or handlers: the server gives it what it
// reads (whether it drains, how many sessions a contract has) as func
// values, and the binary its own checks. It never imports the framework.
package ready

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Checks is what a server's readiness reads.
type Checks struct {
	// Draining reports whether the server drains.
	Draining func() bool
	// RequirePeers lists the contracts whose client must hold a live
	// session; Sessions counts a contract's live sessions.
	RequirePeers []string
	Sessions     func(contract string) int

	mu sync.Mutex
	// named are the checks added (Add), by name.
	named map[string]func() error
}

// Add adds a named check, typically a client's readiness, so a server is
// ready only when its own peers are; a check added under a name again
// replaces the first.
func (c *Checks) Add(name string, check func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.named == nil {
		c.named = map[string]func() error{}
	}
	c.named[name] = check
}

// Missing lists what keeps the server from being ready, or nothing: its
// drain, each required contract without a live session, and each check
// that fails, in the order of their names. The checks run outside the
// lock, so a slow one does not hold up Add.
func (c *Checks) Missing() []string {
	var missing []string
	if c.Draining() {
		missing = append(missing, "draining")
	}
	for _, contract := range c.RequirePeers {
		if c.Sessions(contract) == 0 {
			missing = append(missing, "no live "+contract+" session")
		}
	}
	c.mu.Lock()
	names := make([]string, 0, len(c.named))
	for n := range c.named {
		names = append(names, n)
	}
	slices.Sort(names)
	checks := make([]func() error, len(names))
	for i, n := range names {
		checks[i] = c.named[n]
	}
	c.mu.Unlock()
	for i, check := range checks {
		if err := check(); err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", names[i], err))
		}
	}
	return missing
}

// Err returns nil when the server is ready; otherwise an error that says
// what is missing.
func (c *Checks) Err() error {
	if missing := c.Missing(); len(missing) > 0 {
		return errors.New("not ready: " + strings.Join(missing, "; "))
	}
	return nil
}

// ServeHTTP answers /readyz: 200 when the server is ready ([Checks.Err]),
// else 503 with the reason.
func (c *Checks) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := c.Err(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Live answers /healthz and /livez: the process serves.
func Live(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}
