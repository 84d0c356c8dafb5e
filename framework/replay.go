package framework

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Idempotency keys: a call that carries Lockstep-Idempotency-Key is
// recorded, with its answer, per (contract, peer, client instance, key) in
// the server instance that ran it, so that a resend of the call after its
// answer was lost is answered from the record instead of running the
// handler again (as Stripe's idempotency keys are). Records live in memory
// only, bounded by age, by count and bytes per peer and contract, and by
// bytes over every peer: a restart forgets them, like everything a
// lockstep server holds.

// Defaults for ServerConfig.IdempotencyWindow and IdempotencyKeysPerPeer.
const (
	defaultIdempotencyWindow      = 5 * time.Minute
	defaultIdempotencyKeysPerPeer = 4096
	// maxRecordedAnswer bounds the answer a record keeps. A replay of a
	// call whose answer was larger is refused with conflict: the call was
	// applied, and its answer is gone.
	maxRecordedAnswer = 1 << 20
	// recordBytesPerPeer bounds the bytes one peer's records of a
	// contract hold, their keys and answers; the oldest go first.
	recordBytesPerPeer = 16 << 20
	// defaultIdempotencyMaxBytes is ServerConfig.IdempotencyMaxBytes:
	// sixteen peers at recordBytesPerPeer, or about a million records of a
	// 32-byte key and a small answer; 10,000 node agents making a keyed
	// call every ten seconds hold about 75 MB.
	defaultIdempotencyMaxBytes = 256 << 20
	// recordOverhead is what a record costs beside its key and answer.
	recordOverhead = 128
)

// replayKey names one record: the contract, the peer that sent the call
// (as its limits know it: its identity under mutual TLS, see limitsKey),
// the client instance whose session it came in, and the key. The bounds
// are the peer's, over all its instances: a peer that handshakes under
// ever new instances gets no more records for it, and another identity
// that takes over a lost session's instance name does not reach its
// records.
type replayKey struct {
	contract, peer, instance, key string
}

// replayKeyOf names the record of a call with key in sess.
func replayKeyOf(sess *session, key string) replayKey {
	return replayKey{contract: sess.contract, peer: sess.usage.Key, instance: sess.peer.Instance, key: key}
}

// recordKey is k's key among its peer's records.
func (k replayKey) recordKey() string { return k.instance + "\x00" + k.key }

// recordedAnswer is what a replay is answered with: the first call's
// encoded answer, or its error.
type recordedAnswer struct {
	out []byte
	err error
}

// replayRecord is one key's record. done is closed once the first call's
// answer is known (or the record is dropped because the handler never
// ran); answer is valid after that. bytes is what it counts in its peer's
// records: its key from the start, its answer once known. finished, under
// the store's lock, says the answer is in: only then may the record be
// evicted. A record evicted while its call still ran let a resend of the
// call (after its connection was cut) run the handler a second time,
// beside the first; the records of calls in flight are bounded by the
// in-flight limits instead (Limits.InFlightPerPeer).
type replayRecord struct {
	digest   [sha256.Size]byte
	done     chan struct{}
	answer   recordedAnswer
	created  time.Time
	bytes    int
	finished bool
}

// replayStore holds the records of one server. Its bytes are bounded
// per peer and contract (recordBytesPerPeer) and over all of them
// (maxBytes): a per-peer bound alone let the records grow with the
// number of identities that used keys. Over maxBytes the oldest records
// of the peer holding the most go first, so a peer holding less than an
// equal share of maxBytes keeps its records however many others fill
// theirs.
type replayStore struct {
	window   time.Duration
	perPeer  int
	maxBytes int
	// metrics counts the records forgotten before their window ended
	// (nil: not counted).
	metrics *Metrics

	mu    sync.Mutex
	peers map[string]*peerRecords // contract + "\x00" + peer → records
	bytes int                     // of every peer's records
	// largest orders the peers by their records' bytes, the most first.
	largest peerHeap
}

// peerRecords are one peer's records of one contract, by recordKey, oldest
// first in order, so that age, count and bytes evict from the front.
// Their bytes change only through the store (grow), which keeps its total
// and its heap up to date.
type peerRecords struct {
	byKey map[string]*replayRecord
	order []string
	bytes int
	index int // in replayStore.largest
}

// The bounds that make a replay store forget finished records before
// their window ends, as lockstep_idempotency_evictions_total labels them.
const (
	limitIdempotencyKeysPerPeer  limit = "idempotency_keys_per_peer"  // IdempotencyKeysPerPeer
	limitIdempotencyBytesPerPeer limit = "idempotency_bytes_per_peer" // recordBytesPerPeer
	limitIdempotencyBytes        limit = "idempotency_bytes"          // IdempotencyMaxBytes
)

// replayLimits are the replay store's bounds, each one's eviction counter
// exported from the start.
var replayLimits = []limit{limitIdempotencyKeysPerPeer, limitIdempotencyBytesPerPeer, limitIdempotencyBytes}

func newReplayStore(window time.Duration, perPeer, maxBytes int) *replayStore {
	return &replayStore{window: window, perPeer: perPeer, maxBytes: maxBytes, peers: map[string]*peerRecords{}}
}

// peerHeap is a max-heap of peers by the bytes of their records.
type peerHeap []*peerRecords

func (h peerHeap) Len() int           { return len(h) }
func (h peerHeap) Less(i, j int) bool { return h[i].bytes > h[j].bytes }
func (h peerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *peerHeap) Push(x any) {
	pr := x.(*peerRecords)
	pr.index = len(*h)
	*h = append(*h, pr)
}
func (h *peerHeap) Pop() any {
	old := *h
	pr := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return pr
}

// grow adds n (negative: takes) to pr's bytes and the store's.
func (s *replayStore) grow(pr *peerRecords, n int) {
	pr.bytes += n
	s.bytes += n
	heap.Fix(&s.largest, pr.index)
}

// evictOverTotal forgets the oldest finished records of the peer holding
// the most while every peer's records together hold more than maxBytes.
func (s *replayStore) evictOverTotal() {
	for s.bytes > s.maxBytes && len(s.largest) > 0 && s.evictOldest(s.largest[0], limitIdempotencyBytes) {
	}
}

// requestDigest identifies a request's content, so that a key reused for
// another request is refused rather than answered with another call's
// answer.
func requestDigest(method string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write(body)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// begin looks k up. The first call with a key gets first true and a record
// it must end with finish. A later call with the same key and
// digest gets the existing record: it waits for done and answers with the
// record's answer. A later call with the same key and another digest gets
// an invalid_argument error.
func (s *replayStore) begin(k replayKey, digest [sha256.Size]byte, now time.Time) (rec *replayRecord, first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pk := k.contract + "\x00" + k.peer
	pr := s.peers[pk]
	if pr == nil {
		pr = &peerRecords{byKey: map[string]*replayRecord{}}
		s.peers[pk] = pr
		heap.Push(&s.largest, pr)
	}
	s.expire(pr, now.Add(-s.window))
	rk := k.recordKey()
	if rec := pr.byKey[rk]; rec != nil {
		if rec.digest != digest {
			return nil, false, Errorf(CodeInvalidArgument,
				"idempotency key %q was used for another request within %s: a key names one request", k.key, s.window)
		}
		return rec, false, nil
	}
	for len(pr.order) >= s.perPeer && s.evictOldest(pr, limitIdempotencyKeysPerPeer) {
	}
	rec = &replayRecord{digest: digest, done: make(chan struct{}), created: now, bytes: len(rk) + recordOverhead}
	pr.byKey[rk] = rec
	pr.order = append(pr.order, rk)
	s.grow(pr, rec.bytes)
	s.evictOverBytes(pr)
	s.evictOverTotal()
	return rec, true, nil
}

// recorded reports whether k has a record, done or under way.
func (s *replayStore) recorded(k replayKey) bool {
	if k.key == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.peers[k.contract+"\x00"+k.peer]
	return pr != nil && pr.byKey[k.recordKey()] != nil
}

// finish records the first call's answer and releases the replays that
// wait for it. An answer too large to keep is recorded as a conflict
// saying so: the call was applied, and running it again is what the key
// forbids.
func (s *replayStore) finish(k replayKey, rec *replayRecord, a recordedAnswer) {
	if len(a.out) > maxRecordedAnswer {
		a = recordedAnswer{err: Errorf(CodeConflict,
			"the call with idempotency key %q was applied; its answer (%d bytes) was too large to keep for replays", k.key, len(a.out))}
	}
	s.mu.Lock()
	rec.answer = a
	rec.finished = true
	if pr := s.peers[k.contract+"\x00"+k.peer]; pr != nil && pr.byKey[k.recordKey()] == rec {
		rec.bytes += len(a.out)
		s.grow(pr, len(a.out))
		s.evictOverBytes(pr)
		s.evictOverTotal()
	}
	s.mu.Unlock()
	close(rec.done)
}

// sweep drops every record older than the window, and peers left with
// none; the server's expiry loop calls it.
func (s *replayStore) sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pk, pr := range s.peers {
		s.expire(pr, now.Add(-s.window))
		if len(pr.order) == 0 {
			delete(s.peers, pk)
			heap.Remove(&s.largest, pr.index)
		}
	}
}

// size counts the records held, for status and tests.
func (s *replayStore) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, pr := range s.peers {
		n += len(pr.byKey)
	}
	return n
}

// expire forgets pr's finished records created before before; a record
// whose call still runs goes once it has finished.
func (s *replayStore) expire(pr *peerRecords, before time.Time) {
	for i := 0; i < len(pr.order); {
		rec := pr.byKey[pr.order[i]]
		if rec != nil && !rec.created.Before(before) {
			return
		}
		if rec != nil && !rec.finished {
			i++
			continue
		}
		s.evict(pr, i)
	}
}

// evictOverBytes evicts pr's oldest finished records while they hold more
// than recordBytesPerPeer, keeping the newest.
func (s *replayStore) evictOverBytes(pr *peerRecords) {
	for pr.bytes > recordBytesPerPeer && len(pr.order) > 1 && s.evictOldest(pr, limitIdempotencyBytesPerPeer) {
	}
}

// evictOldest evicts pr's oldest finished record to keep within l,
// counting it, and reports whether it found one. The records before it
// are of calls in flight, as few as the in-flight limits allow.
func (s *replayStore) evictOldest(pr *peerRecords, l limit) bool {
	for i, rk := range pr.order {
		if rec := pr.byKey[rk]; rec == nil || rec.finished {
			s.evict(pr, i)
			s.metrics.idempotencyEvicted(l)
			return true
		}
	}
	return false
}

// evict forgets pr's i-th record in order.
func (s *replayStore) evict(pr *peerRecords, i int) {
	rk := pr.order[i]
	if rec := pr.byKey[rk]; rec != nil {
		s.grow(pr, -rec.bytes)
	}
	delete(pr.byKey, rk)
	if i == 0 {
		pr.order[0] = ""
		pr.order = pr.order[1:]
		return
	}
	pr.order = slices.Delete(pr.order, i, i+1)
}

// dispatch serves one call of sess through serve, once per idempotency
// key: a call that carries Lockstep-Idempotency-Key is recorded under its
// peer and instance (replayKeyOf), and a
// replay of it is answered from the record (replayed is true) without
// running serve again; a replay that arrives while the first still runs
// waits for its answer. The first call's handler runs on a context that
// keeps its deadline but not the request's cancellation, so a connection
// cut after the call arrived does not stop it halfway: its answer is
// recorded for the resend. Calls without a key are served as they are.
func (s *Server) dispatch(ctx context.Context, sess *session, call *Call, body []byte, serve func(context.Context, *Call, []byte) ([]byte, error)) (out []byte, replayed bool, err error) {
	key := call.Header.Get(protocol.HeaderIdempotencyKey)
	if key == "" {
		out, err = serve(ctx, call, body)
		return out, false, err
	}
	k := replayKeyOf(sess, key)
	digest := requestDigest(call.Method, body)
	rec, first, err := s.replays.begin(k, digest, s.cfg.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	if first {
		hctx, cancel := detached(ctx)
		defer cancel()
		err = Errorf(CodeInternal, "the handler of %s did not return", call.Method)
		defer func() { s.replays.finish(k, rec, recordedAnswer{out: out, err: err}) }()
		out, err = serve(hctx, call, body)
		return out, false, err
	}
	select {
	case <-rec.done:
	case <-ctx.Done():
		return nil, false, NewError(CodeDeadlineExceeded, ctx.Err())
	}
	return rec.answer.out, true, rec.answer.err
}

// unrecordedRefusal is a draining server's refusal of a keyed call whose
// key it holds no record of; it is answered with Lockstep-Unrecorded (see
// [Server.refuse]).
type unrecordedRefusal struct{ err *Error }

func (u unrecordedRefusal) Error() string { return u.err.Error() }

// Unwrap gives the refusal's coded error.
func (u unrecordedRefusal) Unwrap() error { return u.err }

// detached returns a context with ctx's values and deadline, but not its
// cancellation.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}
