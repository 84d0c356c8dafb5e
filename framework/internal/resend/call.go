package resend

import (
	"context"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/hello"
	"github.com/lockstep-dev/lockstep/framework/internal/route"
)

// Call is one call as its resend loop sees it: how it picks an endpoint,
// and how one attempt of it is made.
type Call struct {
	// Safety is what a resend of the call may cost.
	Safety Safety
	// Pick returns a routable endpoint whose session can carry the call,
	// or the zero Target when there is none.
	Pick func() Target
	// Attempt makes one attempt of the call at t. With alone, the call
	// goes in a request of its own, never in a multi-call: a keyed call
	// pinned to the instance where it may have run goes so, since only its
	// own request carries its key where the drain's replay rule sees it.
	// An error (the request does not encode for t's version) ends the call.
	Attempt func(ctx context.Context, t Target, alone bool) (Attempt, error)
}

// Run routes the call to a compatible endpoint, blocking in w while there
// is none, and resends it as the resend rules ([Classify]) say; what names
// the call in errors ("nodestatus ReportStatus"). It returns the answer
// and the target that gave it. The wait and the name are not fields of
// Call: what the loop hands on would then take the Call's closures, and
// what they hold, to the heap at every call.
func (c *Call) Run(ctx context.Context, w *route.Wait, what string) ([]byte, Target, error) {
	var t Target
	here := 0 // resends in a row to the same endpoint
	// pin is, once an attempt of a keyed call failed ambiguously, where it
	// may have run: only that server instance holds its record, so every
	// later attempt goes there, and the call's outcome is unknown once that
	// instance is gone.
	var pin *keyedPin
	for resends := 0; ; resends++ {
		if t.E == nil && pin != nil {
			var err error
			if t, err = pin.reach(ctx, w, what); err != nil {
				return nil, Target{}, err
			}
		}
		if t.E == nil {
			if err := w.Until(ctx, func() bool { t = c.Pick(); return t.E != nil }); err != nil {
				return nil, Target{}, err
			}
		}
		if err := w.Pace(ctx, resends); err != nil {
			return nil, Target{}, err
		}
		a, err := c.Attempt(ctx, t, pin != nil) // a pinned call goes alone
		if err != nil {
			return nil, Target{}, err
		}
		safety := c.Safety
		if safety == Keyed && t.S.Pinned() {
			// A pinned peer keeps no idempotency records: a resend there
			// could apply the call again.
			safety = Unsafe
		}
		d, werr := t.Settle(ctx, a, safety, what)
		switch d.Action {
		case Done:
			return a.Body, t, nil
		case Fail:
			if safety != c.Safety && a.Transport == TransportAmbiguous {
				return nil, Target{}, apierror.Errorf(apierror.CodeUnknown, "%s: outcome unknown: it may have been applied by the pinned peer %s, which keeps no idempotency records (%v)",
					what, t.E.Link().URL, werr)
			}
			return nil, Target{}, werr
		case ResendHere:
			if c.Safety == Keyed && pin == nil {
				pin = &keyedPin{e: t.E, instance: t.S.Peer().Instance, cause: werr}
			}
			if here++; here <= MaxResendsHere && t.E.Routable() == t.S {
				continue
			}
			// The endpoint keeps failing, or lost its session: as an
			// idempotent call would, it goes elsewhere (a keyed call only
			// to its pinned instance).
			t.E.Lose(t.S, hello.Unreachable, a.Err)
		case ResendElsewhere:
			if pin != nil && d.Lose == hello.Draining && a.NotProcessed && a.Unrecorded {
				// A draining server answers replays of the keys it recorded
				// (see admit.Gate.Admit), and says when it holds no
				// record of the key: the key never ran there, and the call is
				// free to go elsewhere. Any other not-processed answer (the
				// refusal a drain writes on an idle connection, which reads no
				// request) speaks of this request only.
				pin = nil
			}
		}
		t, here = Target{}, 0
	}
}

// keyedPin is the server instance a keyed call may have run at.
type keyedPin struct {
	e        Endpoint
	instance string
	cause    *apierror.Error // the ambiguous failure that pinned the call
}

// reach waits until the pinned endpoint holds a session with the pinned
// instance, and returns it. Once the endpoint answers from another
// instance, or cannot be reached, or stops, the instance and its record
// are gone: the call fails with unknown, since it may have been applied
// there.
func (p *keyedPin) reach(ctx context.Context, w *route.Wait, what string) (Target, error) {
	var sess Session
	gone := false
	err := w.Until(ctx, func() bool {
		if sess = p.e.Routable(); sess != nil {
			return true
		}
		switch p.e.State() {
		case hello.Unreachable, hello.Draining, hello.Refused:
			gone = true
		}
		return gone || p.e.Stopped()
	})
	switch {
	case err != nil:
		return Target{}, err
	case sess != nil && sess.Peer().Instance == p.instance:
		return Target{E: p.e, S: sess}, nil
	}
	return Target{}, apierror.Errorf(apierror.CodeUnknown, "%s: outcome unknown: it may have been applied by %s instance %s, which is gone (%v); its idempotency record went with it",
		what, p.e.Link().URL, p.instance, p.cause)
}
