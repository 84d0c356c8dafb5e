package hello

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/probe"
	"github.com/lockstep-dev/lockstep/handshake"
)

// move is one call of a Loop's Move.
type move struct {
	state State
	sess  *int
}

// script runs a Loop on a fake clock: each hello waits for the answer the
// test hands it, and every move, keep-alive, loss and close is reported.
type script struct {
	t      *testing.T
	clock  *clockwork.FakeClock
	cancel context.CancelFunc
	kick   chan struct{}
	hellos chan bool // the hold of each hello said
	answer chan Result[*int]
	moves  chan move
	kept   chan *int
	alive  chan State // what a kept session's KeepAlive returns
	lost   chan move
	closed chan *int
	listen chan struct{}
	done   chan struct{}
}

var testBackoff = probe.Backoff{Base: time.Second, Max: 4 * time.Second, Multiplier: 2}

func newScript(t *testing.T) (*script, *Loop[*int]) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &script{t: t, clock: clockwork.NewFakeClock(), cancel: cancel, kick: make(chan struct{}, 1),
		hellos: make(chan bool), answer: make(chan Result[*int]), moves: make(chan move, 8),
		kept: make(chan *int, 1), alive: make(chan State), lost: make(chan move, 1), closed: make(chan *int, 2),
		listen: make(chan struct{}, 1), done: make(chan struct{})}
	l := &Loop[*int]{Ctx: ctx, Clock: s.clock, Backoff: testBackoff, Kick: s.kick, Announced: make(chan struct{}),
		Hello: func(hold bool) Result[*int] {
			select {
			case s.hellos <- hold:
				return <-s.answer
			case <-ctx.Done():
				return Failed[*int](Unreachable, ctx.Err())
			}
		},
		Move: func(state State, sess *int, _ error) { s.moves <- move{state, sess} },
		KeepAlive: func(sess *int) (State, error) {
			s.kept <- sess
			select {
			case state := <-s.alive:
				return state, fmt.Errorf("lost in %s", state)
			case <-ctx.Done():
				return Stopped, nil
			}
		},
		Lose:          func(sess *int, state State, _ error) { s.lost <- move{state, sess} },
		Close:         func(sess *int) { s.closed <- sess },
		WaitListening: func() { s.listen <- struct{}{} },
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("the loop did not end with its context")
		}
	})
	return s, l
}

// hello waits for the loop's next hello, checks its hold, and answers h.
func (s *script) hello(hold bool, h Result[*int]) {
	s.t.Helper()
	select {
	case got := <-s.hellos:
		assert.Equal(s.t, hold, got, "the hello's hold")
	case <-time.After(10 * time.Second):
		s.t.Fatal("no hello")
	}
	s.answer <- h
}

// noHelloYet checks that the loop says no hello while the fake clock
// stands: only a timer's firing could make it.
func (s *script) noHelloYet() {
	s.t.Helper()
	select {
	case <-s.hellos:
		s.t.Fatal("a hello before its time")
	default:
	}
}

// waitTimer waits until the loop waits on a timer, then moves the clock
// by d.
func (s *script) waitTimer(d time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(s.t, s.clock.BlockUntilContext(ctx, 1))
	s.clock.Advance(d)
}

func (s *script) nextMove() move {
	s.t.Helper()
	select {
	case m := <-s.moves:
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no move")
		return move{}
	}
}

func TestLoopPacesFailedHellosAsEachFailureAsks(t *testing.T) {
	s, l := newScript(t)
	go func() { defer close(s.done); l.Run() }()

	s.hello(false, Failed[*int](Unreachable, errors.New("connection reset")))
	assert.Equal(t, move{Unreachable, nil}, s.nextMove())
	s.waitTimer(time.Second - time.Millisecond)
	s.noHelloYet()
	s.clock.Advance(time.Millisecond)
	s.hello(false, Failed[*int](Unreachable, errors.New("connection reset")))
	s.nextMove()
	s.waitTimer(2*time.Second - time.Millisecond)
	s.noHelloYet()
	s.clock.Advance(time.Millisecond)

	// Nothing listens: the prober waits, and the backoff starts afresh.
	s.hello(false, Failed[*int](Unreachable, fmt.Errorf("dial: %w", syscall.ECONNREFUSED)))
	s.nextMove()
	<-s.listen
	s.hello(false, Failed[*int](Unreachable, errors.New("connection reset")))
	s.nextMove()
	s.waitTimer(time.Second - time.Millisecond)
	s.noHelloYet()
	s.clock.Advance(time.Millisecond)

	// A draining server's refusals are paced apart from the backoff.
	s.hello(false, RefusedWith[*int](refusal(handshake.ReasonDraining)))
	assert.Equal(t, Draining, s.nextMove().state)
	pace := DrainingPace(testBackoff, 0)
	s.waitTimer(pace - time.Millisecond)
	s.noHelloYet()
	s.clock.Advance(time.Millisecond)
	s.hello(false, Failed[*int](Unreachable, errors.New("connection reset")))
}

func TestLoopAsksAServerToHoldARefusalItMayOutgrow(t *testing.T) {
	s, l := newScript(t)
	go func() { defer close(s.done); l.Run() }()

	s.hello(false, RefusedWith[*int](refusal(handshake.ReasonVersionMismatch)))
	assert.Equal(t, Refused, s.nextMove().state)
	// At once, asking to hold it; answered at once, the next is paced.
	s.hello(true, RefusedWith[*int](refusal(handshake.ReasonVersionMismatch)))
	s.nextMove()
	s.waitTimer(time.Second - time.Millisecond)
	s.noHelloYet()
	s.clock.Advance(time.Millisecond)
	s.hello(true, RefusedWith[*int](refusal(handshake.ReasonReleaseConstraint)))
}

func TestLoopKeepsASessionUntilItIsLostAndClosesItAsTheLossAsks(t *testing.T) {
	s, l := newScript(t)
	go func() { defer close(s.done); l.Run() }()

	one, two := new(int), new(int)
	s.hello(false, Result[*int]{State: Ready, Sess: one})
	assert.Equal(t, move{Ready, one}, s.nextMove())
	assert.Same(t, one, <-s.kept)
	s.alive <- Draining
	assert.Equal(t, move{Draining, one}, <-s.lost)
	assert.Same(t, one, <-s.closed, "a drain is acknowledged by closing the session")

	// The next hello goes at once; a session the server no longer holds
	// is closed only when the loop ends.
	s.hello(false, Result[*int]{State: Ready, Sess: two})
	s.nextMove()
	<-s.kept
	s.alive <- Connecting
	assert.Equal(t, move{Connecting, two}, <-s.lost)
	s.hello(false, Failed[*int](Unreachable, errors.New("connection reset")))
	s.nextMove()
	assert.Empty(t, s.closed)
	s.cancel()
	<-s.done
	assert.Equal(t, move{Stopped, nil}, s.nextMove())
	assert.Same(t, two, <-s.closed)
}

func TestPinnedLoopRestsAfterALostConnection(t *testing.T) {
	s, l := newScript(t)
	sess := new(int)
	routable := make(chan *int) // what the loop's next look at the session finds
	go func() { defer close(s.done); l.RunPinned(sess, func() *int { return <-routable }) }()

	s.kick <- struct{}{}
	routable <- sess
	assert.Empty(t, s.moves, "the client made it routable before the loop ran; a kick without a loss moves nothing")
	s.kick <- struct{}{}
	routable <- nil
	s.waitTimer(time.Second - time.Millisecond)
	assert.Empty(t, s.moves, "resting")
	s.clock.Advance(time.Millisecond)
	assert.Equal(t, move{Ready, sess}, s.nextMove())
	s.cancel()
	<-s.done
	assert.Equal(t, move{Stopped, nil}, s.nextMove())
}
