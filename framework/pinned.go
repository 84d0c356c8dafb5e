package framework

import "strings"

// PinnedPeer is an external server that does not handshake, such as a
// Kubernetes scheduler extender: the client calls it at Version, at each
// method's declared path under URL, sends that version's JSON, and validates
// every answer against that version's schemas.
type PinnedPeer struct {
	// URL is the peer's base URL; a method with path "filter" is called at
	// URL + "/filter".
	URL string
	// Version is the contract version the peer speaks.
	Version string
	// Paths, by method name, override the paths the contract declares for
	// this peer alone: a Kubernetes scheduler configuration names an
	// extender's verbs (filterVerb: "filter-by-zone"), and each extender
	// chooses its own. A path is joined to URL as a declared one is.
	Paths map[string]string
}

// addPinned adds a pinned endpoint; it is routable at once and stays in the
// set whatever the endpoint source reports.
func (c *Client) addPinned(url string, v *peerVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := strings.TrimRight(url, "/")
	e := newEndpoint(c, base)
	e.pinned = v
	e.endFirstRound() // routable from the start: there is no handshake
	c.endpoints[base] = e
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		e.runPinned()
	}()
	c.rebuildLocked()
}

// runPinned keeps a pinned endpoint routable: it has no handshake and no
// session to lose, only connections that fail. After a failed connection
// the endpoint rests for a backoff delay, then is tried again.
func (e *endpoint) runPinned() {
	sess := &clientSession{version: e.pinned}
	failures := 0
	defer e.setState(stateStopped, nil, nil)
	for {
		e.setState(stateReady, sess, nil)
		select {
		case <-e.ctx.Done():
			return
		case <-e.kick:
		}
		if e.sess.Load() == sess {
			failures = 0 // a kick without a loss
			continue
		}
		t := e.c.cfg.Clock.NewTimer(e.c.cfg.Backoff.Delay(failures))
		failures++
		select {
		case <-e.ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
	}
}
