package probe

import "time"

// dialBudget is what keeps an address's prober from dialling more often
// than the endpoints waiting for it would have on their own. Each waiter,
// alone, would have redialled after each step of its backoff (5 ms
// growing by 1.6 to 100 ms by default: about 10 dials a second once the
// address has been dark for a quarter of a second). The prober may have
// made, by any moment, at most as many dials as all its waiters together
// would have made by then, counted from when each began to wait (a waiter
// that left keeps what it had accrued): one waiter is dialled for as it
// would have dialled, two at about twice its rate, and Interval caps
// the rate however many wait. The budget starts again when a dial
// connects and wakes them.
//
// The guarantee is on the count, so a listener that appears after a long
// dark time is found within the waiters' combined step (Backoff.Max for
// one waiter), not within Interval: a dark address cannot be
// watched more closely than its waiters pay for.
type dialBudget struct {
	waiting map[*budgetWaiter]struct{}
	owed    float64 // the dials earned by waiters that left
	made    float64 // the dials made since the budget started
}

// budgetWaiter is one waiter's share of the budget.
type budgetWaiter struct {
	since   time.Time
	backoff Backoff
}

// join adds a waiter that began to wait at now, with its backoff.
func (b *dialBudget) join(now time.Time, backoff Backoff) *budgetWaiter {
	if b.waiting == nil {
		b.waiting = map[*budgetWaiter]struct{}{}
	}
	w := &budgetWaiter{since: now, backoff: backoff}
	b.waiting[w] = struct{}{}
	return w
}

// leave removes w at now, keeping the dials it accrued. A waiter of a
// budget that started again since it joined (it was woken) has no share.
func (b *dialBudget) leave(w *budgetWaiter, now time.Time) {
	if _, ok := b.waiting[w]; !ok {
		return
	}
	delete(b.waiting, w)
	b.owed += backoffAccrued(w.backoff, now.Sub(w.since))
}

// spend records a dial.
func (b *dialBudget) spend() { b.made++ }

// restart empties the budget: the waiters it had were woken.
func (b *dialBudget) restart() { *b = dialBudget{} }

// due reports whether one more dial is within the budget at t.
func (b *dialBudget) due(t time.Time) bool { return b.covers(b.earned(t)) }

// covers reports whether n dials earned pay for one more than were made.
func (b *dialBudget) covers(n float64) bool { return n >= b.made+1-1e-9 }

// budgetResolution is how finely next finds the moment a dial is due.
const budgetResolution = 50 * time.Microsecond

// earned is how many dials the budget holds at t: the waiters' accrued
// dials and those of the ones that left.
func (b *dialBudget) earned(t time.Time) float64 {
	n := b.owed
	for w := range b.waiting {
		n += backoffAccrued(w.backoff, t.Sub(w.since))
	}
	return n
}

// next returns the earliest moment from from on when one more dial is
// within the budget. With no waiter in the budget (the woken ones have not
// left yet) it returns a minute on: a waiter that joins replans the loop.
//
// Dials that Interval kept the prober from making are not saved up
// beyond one: spent later they would come faster than the waiters would
// have dialled then (two waiters whose early 5-50 ms steps the interval
// held back would have been dialled for every 30 ms until the count caught
// up, at 0.5 s 28 a second where they had dialled 20). So the rate, not
// only the count, stays within the waiters' own at every moment.
func (b *dialBudget) next(from time.Time) time.Time {
	n := b.earned(from)
	if n-b.made > 1 {
		b.made = n - 1
	}
	if b.covers(n) {
		return from
	}
	var step time.Duration
	for w := range b.waiting {
		if step == 0 || w.backoff.Max < step {
			step = w.backoff.Max
		}
	}
	if step == 0 {
		return from.Add(time.Minute)
	}
	// Every waiter earns at least one dial per Backoff.Max, and the
	// budget was not overspent at from, so the moment lies within the
	// shortest one.
	lo, hi := from, from.Add(step)
	for hi.Sub(lo) > budgetResolution {
		mid := lo.Add(hi.Sub(lo) / 2)
		if b.due(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// backoffAccrued is how many redials a client with backoff b (its
// defaults filled) has earned elapsed after a first refusal when every
// attempt is refused. On its own it redials after each of its delays
// (growing as in [Backoff.Delay], without jitter: jitter moves a delay
// both ways, so on average it changes nothing); here each delay's dial is
// earned evenly over the delay after it, so a budget of several waiters
// is spent at an even pace, not in bursts, and never ahead of the dials
// the waiters would have made (at every moment the sum is below the sum
// of their counts). After 64 delays the rest are taken as equal to the
// last (a multiplier so close to 1 that it has not reached Max by then).
func backoffAccrued(b Backoff, elapsed time.Duration) float64 {
	var n, at float64
	d := float64(b.Base)
	for {
		step := min(d, float64(b.Max))
		if at+step > float64(elapsed) || d >= float64(b.Max) || n >= 64 {
			return max(0, n+(float64(elapsed)-at)/step-1)
		}
		at += step
		n++
		d *= b.Multiplier
	}
}
