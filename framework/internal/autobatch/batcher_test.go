package autobatch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestReusedCallsGetTheirOwnOutcome has many callers share a batcher of
// one slot, so that nearly every call waits and the waiting calls are
// reused, while some callers' contexts end as their calls wait or travel.
// Every caller must get its own call's outcome (an echo of its body), or,
// when its context ended, the ended outcome: a call reused while the
// batcher still held it would hand one caller another's outcome.
func TestReusedCallsGetTheirOwnOutcome(t *testing.T) {
	const callers, each = 16, 300
	var many, manyCalls atomic.Int64
	b := New(Config{MaxCalls: 8, MaxInFlight: 1, StallAfter: time.Hour}, clockwork.NewRealClock(), Send[string]{
		One: func(_ context.Context, _ string, body []byte, _ http.Header) string {
			runtime.Gosched()
			return string(body)
		},
		Many: func(_ context.Context, calls []*Call[string]) {
			many.Add(1)
			manyCalls.Add(int64(len(calls)))
			for _, c := range calls {
				out := string(c.Body)
				runtime.Gosched() // widen the window in which a caller leaves
				c.Deliver(out)
			}
		},
		Ended: func(error) string { return "ended" },
	})
	var ended atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	deadline := time.Now().Add(30 * time.Second)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < each && time.Now().Before(deadline); i++ {
				body := fmt.Sprintf("caller %d call %d", g, i)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				leaves := r.IntN(4) == 0
				if leaves {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(200))*time.Microsecond)
				}
				got := b.Do(ctx, "M", []byte(body), nil)
				cancel()
				switch {
				case got == body:
				case leaves && got == "ended":
					ended.Add(1)
				default:
					errs <- fmt.Errorf("%s got %q", body, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if many.Load() == 0 {
		t.Fatal("no calls travelled together: the test did not exercise waiting calls")
	}
	t.Logf("%d multi-calls carried %d calls; %d callers left before their outcome", many.Load(), manyCalls.Load(), ended.Load())
}
