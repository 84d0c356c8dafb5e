package replay

import (
	"container/heap"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
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
	DefaultWindow      = 5 * time.Minute
	DefaultKeysPerPeer = 4096
	// MaxRecordedAnswer bounds the answer a record keeps. A replay of a
	// call whose answer was larger is refused with conflict: the call was
	// applied, and its answer is gone.
	MaxRecordedAnswer = 1 << 20
	// recordBytesPerPeer bounds the bytes one peer's records of a
	// contract hold, their keys and answers; the oldest go first.
	recordBytesPerPeer = 16 << 20
	// DefaultMaxBytes is ServerConfig.IdempotencyMaxBytes:
	// sixteen peers at recordBytesPerPeer, or about a million records of a
	// 32-byte key and a small answer; 10,000 node agents making a keyed
	// call every ten seconds hold about 75 MB.
	DefaultMaxBytes = 256 << 20
	// recordOverhead is what a record costs beside its key and answer.
	recordOverhead = 128
)

// Key names one record: the contract, the peer that sent the call
// (as the server's limits know it: its identity under mutual TLS),
// the client instance whose session it came in, and the key. The bounds
// are the peer's, over all its instances: a peer that handshakes under
// ever new instances gets no more records for it, and another identity
// that takes over a lost session's instance name does not reach its
// records.
type Key struct {
	Contract, Peer, Instance, Key string
}

// recordKey is k's key among its peer's records.
func (k Key) recordKey() string { return k.Instance + "\x00" + k.Key }

// Answer is what a replay is answered with: the first call's
// encoded answer, or its error.
type Answer struct {
	Out []byte
	Err error
}

// Record is one key's record. done is closed once the first call's
// answer is known (or the record is dropped because the handler never
// ran); answer is valid after that. bytes is what it counts in its peer's
// records: its key from the start, its answer once known. finished, under
// the store's lock, says the answer is in: only then may the record be
// evicted. A record evicted while its call still ran let a resend of the
// call (after its connection was cut) run the handler a second time,
// beside the first; the records of calls in flight are bounded by the
// in-flight limits instead (Limits.InFlightPerPeer).
type Record struct {
	digest   [sha256.Size]byte
	done     chan struct{}
	answer   Answer
	created  time.Time
	bytes    int
	finished bool
}

// Store holds the records of one server. Its bytes are bounded
// per peer and contract (recordBytesPerPeer) and over all of them
// (maxBytes): a per-peer bound alone let the records grow with the
// number of identities that used keys. Over maxBytes the oldest records
// of the peer holding the most go first, so a peer holding less than an
// equal share of maxBytes keeps its records however many others fill
// theirs.
type Store struct {
	window   time.Duration
	perPeer  int
	maxBytes int
	// Evicted, when set, counts a record forgotten before its window
	// ended, by the bound (Limits) that forgot it.
	Evicted func(limit string)

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
	byKey map[string]*Record
	order []string
	bytes int
	index int // in Store.largest
}

// The bounds that make a store forget finished records before their
// window ends, as lockstep_idempotency_evictions_total labels them.
const (
	LimitKeysPerPeer  = "idempotency_keys_per_peer"  // ServerConfig.IdempotencyKeysPerPeer
	LimitBytesPerPeer = "idempotency_bytes_per_peer" // recordBytesPerPeer
	LimitBytes        = "idempotency_bytes"          // ServerConfig.IdempotencyMaxBytes
)

// Limits are the store's bounds, each one's eviction counter exported
// from the start.
var Limits = []string{LimitKeysPerPeer, LimitBytesPerPeer, LimitBytes}

// New returns a store that keeps records for window, at most perPeer per
// peer and contract, and at most maxBytes over all peers.
func New(window time.Duration, perPeer, maxBytes int) *Store {
	return &Store{window: window, perPeer: perPeer, maxBytes: maxBytes, peers: map[string]*peerRecords{}}
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
func (s *Store) grow(pr *peerRecords, n int) {
	pr.bytes += n
	s.bytes += n
	heap.Fix(&s.largest, pr.index)
}

// evictOverTotal forgets the oldest finished records of the peer holding
// the most while every peer's records together hold more than maxBytes.
func (s *Store) evictOverTotal() {
	for s.bytes > s.maxBytes && len(s.largest) > 0 && s.evictOldest(s.largest[0], LimitBytes) {
	}
}

// RequestDigest identifies a request's content, so that a key reused for
// another request is refused rather than answered with another call's
// answer.
func RequestDigest(method string, body []byte) [sha256.Size]byte {
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
func (s *Store) Begin(k Key, digest [sha256.Size]byte, now time.Time) (rec *Record, first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pk := k.Contract + "\x00" + k.Peer
	pr := s.peers[pk]
	if pr == nil {
		pr = &peerRecords{byKey: map[string]*Record{}}
		s.peers[pk] = pr
		heap.Push(&s.largest, pr)
	}
	s.expire(pr, now.Add(-s.window))
	rk := k.recordKey()
	if rec := pr.byKey[rk]; rec != nil {
		if rec.digest != digest {
			return nil, false, apierror.Errorf(apierror.CodeInvalidArgument,
				"idempotency key %q was used for another request within %s: a key names one request", k.Key, s.window)
		}
		return rec, false, nil
	}
	for len(pr.order) >= s.perPeer && s.evictOldest(pr, LimitKeysPerPeer) {
	}
	rec = &Record{digest: digest, done: make(chan struct{}), created: now, bytes: len(rk) + recordOverhead}
	pr.byKey[rk] = rec
	pr.order = append(pr.order, rk)
	s.grow(pr, rec.bytes)
	s.evictOverBytes(pr)
	s.evictOverTotal()
	return rec, true, nil
}

// recorded reports whether k has a record, done or under way.
func (s *Store) Recorded(k Key) bool {
	if k.Key == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.peers[k.Contract+"\x00"+k.Peer]
	return pr != nil && pr.byKey[k.recordKey()] != nil
}

// finish records the first call's answer and releases the replays that
// wait for it. An answer too large to keep is recorded as a conflict
// saying so: the call was applied, and running it again is what the key
// forbids.
func (s *Store) Finish(k Key, rec *Record, a Answer) {
	if len(a.Out) > MaxRecordedAnswer {
		a = Answer{Err: apierror.Errorf(apierror.CodeConflict,
			"the call with idempotency key %q was applied; its answer (%d bytes) was too large to keep for replays", k.Key, len(a.Out))}
	}
	s.mu.Lock()
	rec.answer = a
	rec.finished = true
	if pr := s.peers[k.Contract+"\x00"+k.Peer]; pr != nil && pr.byKey[k.recordKey()] == rec {
		rec.bytes += len(a.Out)
		s.grow(pr, len(a.Out))
		s.evictOverBytes(pr)
		s.evictOverTotal()
	}
	s.mu.Unlock()
	close(rec.done)
}

// sweep drops every record older than the window, and peers left with
// none; the server's expiry loop calls it.
func (s *Store) Sweep(now time.Time) {
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
func (s *Store) Size() int {
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
func (s *Store) expire(pr *peerRecords, before time.Time) {
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
func (s *Store) evictOverBytes(pr *peerRecords) {
	for pr.bytes > recordBytesPerPeer && len(pr.order) > 1 && s.evictOldest(pr, LimitBytesPerPeer) {
	}
}

// evictOldest evicts pr's oldest finished record to keep within l,
// counting it, and reports whether it found one. The records before it
// are of calls in flight, as few as the in-flight limits allow.
func (s *Store) evictOldest(pr *peerRecords, l string) bool {
	for i, rk := range pr.order {
		if rec := pr.byKey[rk]; rec == nil || rec.finished {
			s.evict(pr, i)
			if s.Evicted != nil {
				s.Evicted(l)
			}
			return true
		}
	}
	return false
}

// evict forgets pr's i-th record in order.
func (s *Store) evict(pr *peerRecords, i int) {
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

// Done is closed once the record's answer is known.
func (r *Record) Done() <-chan struct{} { return r.done }

// Answer is the first call's answer; valid once Done is closed.
func (r *Record) Answer() Answer { return r.answer }
