// Package lifecycle is where a server is in its life: a named state type
// with the one table of the moves allowed between states, the channels
// that announce a drain and a stop, and a lock-free read of the state for
// every request's path (is the server draining?).
//
// It is separate because the states and their moves are rules of their
// own that a reviewer checks in one place (raft's StateType and step
// functions); the server keeps the work each move starts (telling
// watchers, stopping the session clock, closing the HTTP server) and the
// lock that orders a move with that work. It never imports the framework.
package lifecycle

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// State is where a server is in its life. The states are ordered, and a
// server never moves back.
type State uint32

const (
	// Registering: handlers, topics and routes may be registered;
	// nothing runs yet.
	Registering State = iota
	// Running: registration is closed and the session clock (the
	// expiry loop) runs; Start or Serve moved it here.
	Running
	// Draining: Shutdown's first phase, or Close has begun: no new
	// sessions, calls answered with the draining header, watch streams
	// closed with a closing frame. [Life.DrainStarted] is closed.
	Draining
	// Closing: Shutdown's second phase; the HTTP server is shutting
	// down, and a Serve not begun yet returns at once.
	Closing
	// Stopped: watch streams are cut and the session clock has stopped;
	// [Life.Stopped] is closed. Close and a Shutdown whose context ended
	// move here from Draining, and close the HTTP server after.
	Stopped
)

func (st State) String() string {
	return [...]string{"registering", "running", "draining", "closing", "stopped"}[st]
}

// Moves lists, for each state, the states a server may move to. A server
// that is shut down before it started drains without ever running; Close,
// and a Shutdown whose context ended, stop it without closing first.
var Moves = [...][]State{
	Registering: {Running, Draining},
	Running:     {Draining},
	Draining:    {Closing, Stopped},
	Closing:     {Stopped},
	Stopped:     nil,
}

// Life is one server's state. Every change of state goes through
// [Life.Move], under the server's lock; the state may be read without it.
type Life struct {
	state        atomic.Uint32
	drainStarted chan struct{} // closed on the move to Draining
	stopped      chan struct{} // closed on the move to Stopped
}

// New returns the life of a server that is registering.
func New() *Life {
	return &Life{drainStarted: make(chan struct{}), stopped: make(chan struct{})}
}

// State returns where the server is now.
func (l *Life) State() State { return State(l.state.Load()) }

// Draining reports whether the server has begun to drain (or has gone
// further): it is read on every request's path.
func (l *Life) Draining() bool { return l.State() >= Draining }

// DrainStarted returns a channel closed on the move to Draining.
func (l *Life) DrainStarted() <-chan struct{} { return l.drainStarted }

// Stopped returns a channel closed on the move to Stopped.
func (l *Life) Stopped() <-chan struct{} { return l.stopped }

// Move moves the server to state to, which must be one of
// Moves[l.State()], and reports whether it moved: a move to a state the
// server has reached or passed already is none, since Start, Shutdown and
// Close may each be called more than once, and concurrently. Entering
// Draining closes DrainStarted; entering Stopped closes Stopped. The
// server's lock must be held, so that a move is one step with what the
// server does under that lock; it panics on a move the table does not
// allow.
func (l *Life) Move(to State) bool {
	from := l.State()
	if to <= from {
		return false
	}
	if !slices.Contains(Moves[from], to) {
		panic(fmt.Sprintf("lockstep: server cannot move from %s to %s", from, to))
	}
	l.state.Store(uint32(to))
	switch to {
	case Draining:
		close(l.drainStarted)
	case Stopped:
		close(l.stopped)
	}
	return true
}
