package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/delivery"
	"github.com/lockstep-dev/lockstep/bench/internal/procstat"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"

	"github.com/lockstep-dev/lockstep/internal/benchhook"
)

// fanSystem is one variant's watchers and writer.
type fanSystem struct {
	name     string
	watchers []*delivery.Watcher
	// write writes change i (key i%results.TopicKeys) stamped t and returns the
	// write's id (for convergence and deferred timing).
	write func(i int, t time.Time) (int64, error)
	// final returns each key's final id once the writes are done.
	final func() ([]int64, error)
	// timeOf returns the write time of an id that write could not return
	// (etcd's revision, known only once the Put is answered).
	timeOf func(id int64) (int64, bool)
	close  func() error
}

var recording atomic.Bool

// Fanout measures P4, P4s and P5: a writer changing 100 NodeStatus objects
// at a fixed rate and watchers spread over 50 clients, each watcher
// decoding every change into Go types, in lockstep (an informer per
// watcher, each decoding; an informer per watcher taking a deep copy of
// its client's one decode; and shared informers), etcd and a gRPC stream per watcher (the
// latter two also without decoding, as anchors). At 1000 watchers it also
// runs the overload rate. Each variant's watchers are open only during
// its own rounds (see fanoutAt), each round starting from a settled heap
// (see settleHeap).
func (s *Suite) Fanout() error {
	counts := pick(s, []int{100, 1000}, []int{100})
	duration := pick(s, 4*time.Second, 500*time.Millisecond)
	for _, watchers := range counts {
		rates := []int{100}
		if watchers == counts[len(counts)-1] {
			rates = append(rates, 1000)
		}
		if err := s.fanoutAt(watchers, rates, duration); err != nil {
			return err
		}
	}
	return nil
}

// fanoutAt runs every variant at one watcher count. Each variant's watchers
// are opened just before its rounds and closed right after them, so that no
// variant's idle watchers (goroutines, connections, keep-alives) load the
// machine while another variant is measured.
func (s *Suite) fanoutAt(watchers int, rates []int, duration time.Duration) error {
	return s.runFanoutVariants(watchers, rates, duration, fanoutVariants)
}

// fanoutVariants are the fan-out workloads' variants in the order they run
// in a round.
var fanoutVariants = []string{results.VFanLockstep, results.VFanCopies, results.VFanShared, results.VFanEtcd, results.VFanEtcdRaw,
	results.VFanGRPC, results.VFanGRPCRaw}

// fanoutOpeners open each fan-out variant's watchers and writer.
var fanoutOpeners = map[string]func(int) (*fanSystem, error){
	results.VFanLockstep: openLockstepFanout(fanFeeds), results.VFanShared: openLockstepFanout(fanShared),
	results.VFanOwnStreams: openLockstepFanout(fanOwnStreams), results.VFanCopies: openLockstepFanout(fanCopies),
	results.VFanEtcd: openEtcdFanout(true), results.VFanEtcdRaw: openEtcdFanout(false),
	results.VFanGRPC: openGRPCFanout(true), results.VFanGRPCRaw: openGRPCFanout(false),
}

// FanoutOnly runs only the named fan-out variants (all of them when names
// is empty) at one watcher count and the given write rates, for rounds of
// duration: the fan-out figures side by side without the rest of the suite.
func (s *Suite) FanoutOnly(watchers int, rates []int, duration time.Duration, names []string) error {
	if len(names) == 0 {
		names = fanoutVariants
	}
	for _, n := range names {
		if fanoutOpeners[n] == nil {
			return fmt.Errorf("no fan-out variant %q (have %q)", n, fanoutVariants)
		}
	}
	return s.runFanoutVariants(watchers, rates, duration, names)
}

// runFanoutVariants runs the named variants, alternating their order round
// by round.
func (s *Suite) runFanoutVariants(watchers int, rates []int, duration time.Duration, names []string) error {
	opens := make([]func(int) (*fanSystem, error), len(names))
	for k, n := range names {
		opens[k] = fanoutOpeners[n]
	}
	if s.cfg.FanoutAllOpen {
		return s.runFanoutAllOpen(watchers, rates, duration, opens)
	}
	for round := range s.cfg.Rounds {
		for k := range opens {
			s.logf("fan-out: opening %d watchers", watchers)
			sys, err := opens[(k+round)%len(opens)](watchers)
			if err != nil {
				return err
			}
			err = s.fanoutRounds(sys, watchers, rates, duration)
			if cerr := sys.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// runFanoutAllOpen is runFanoutVariants with every variant's watchers
// opened first and kept open through all the rounds (Config.FanoutAllOpen).
func (s *Suite) runFanoutAllOpen(watchers int, rates []int, duration time.Duration, opens []func(int) (*fanSystem, error)) (err error) {
	var open []*fanSystem
	defer func() {
		for _, sys := range open {
			if cerr := sys.close(); err == nil {
				err = cerr
			}
		}
	}()
	for _, o := range opens {
		s.logf("fan-out: opening %d watchers", watchers)
		sys, err := o(watchers)
		if err != nil {
			return err
		}
		open = append(open, sys)
	}
	for round := range s.cfg.Rounds {
		for k := range open {
			if err := s.fanoutRounds(open[(k+round)%len(open)], watchers, rates, duration); err != nil {
				return err
			}
		}
	}
	return nil
}

// fanoutRounds measures one open variant at each write rate.
func (s *Suite) fanoutRounds(sys *fanSystem, watchers int, rates []int, duration time.Duration) error {
	for _, rate := range rates {
		if rate > 100 && strings.Contains(sys.name, "no decode") {
			continue // the overload rows are the decoding ones
		}
		wl := results.FanoutWorkload(watchers, rate)
		if !s.cfg.NoSettle {
			t := time.Now()
			settleHeap()
			s.logf("fan-out: heap settled in %v", time.Since(t).Round(time.Millisecond))
		}
		if err := s.round(wl, sys.name, func() (results.Round, error) { return runFanout(sys, rate, duration) }); err != nil {
			return err
		}
	}
	return nil
}

// settleHeap runs a full collection before a round (before the host's
// idle is measured and the round's clocks start): the heap then holds the
// open variant's watchers and what earlier rounds kept, not the garbage
// of the variant closed before it nor that of its own opening, and the
// collector starts the round at the same point of its cycle, its next
// goal set by this variant's live heap, so that each variant pays for
// collecting its own heap alone.
func settleHeap() { runtime.GC() }

func runFanout(sys *fanSystem, rate int, duration time.Duration) (results.Round, error) {
	for _, w := range sys.watchers {
		w.Reset()
	}
	total := int(duration.Seconds() * float64(rate))
	writeTimes := make(map[int64]int64, total)
	recording.Store(true)
	rt := procstat.Take()
	cpu := benchrun.StartCPU()
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	written := 0
	// A throttled writer stops at half again the round's time: what it
	// wrote by then is its achieved rate.
	stopBy := start.Add(duration + duration/2)
	for written < total && time.Now().Before(stopBy) {
		<-tick.C
		due := min(int(time.Since(start).Seconds()*float64(rate)), total)
		for ; written < due && time.Now().Before(stopBy); written++ {
			t := time.Now()
			id, err := sys.write(written, t)
			if err != nil {
				tick.Stop()
				recording.Store(false)
				return results.Round{}, err
			}
			writeTimes[id] = t.UnixNano()
		}
	}
	tick.Stop()
	lastWrite := time.Now()
	writeRate := float64(written) / lastWrite.Sub(start).Seconds()
	final, err := sys.final()
	if err != nil {
		recording.Store(false)
		return results.Round{}, err
	}
	unconverged := 0
	for _, w := range sys.watchers {
		for {
			if w.Converged(final) {
				break
			}
			if time.Since(lastWrite) > results.FanoutConvergeBy {
				unconverged++
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	converged := time.Since(lastWrite)
	wall := time.Since(start)
	used := cpu.Used()
	proc := rt.Since()
	recording.Store(false)

	var lat []time.Duration
	var delivered int64
	for _, w := range sys.watchers {
		timed, pending, n := w.Totals()
		lat = append(lat, timed...)
		for _, p := range pending {
			t, ok := writeTimes[p[0]]
			if !ok && sys.timeOf != nil {
				t, ok = sys.timeOf(p[0])
			}
			if ok {
				lat = append(lat, time.Duration(p[1]-t))
			}
		}
		delivered += n
	}
	slices.Sort(lat)
	convergedMs := float64(converged) / 1e6
	if unconverged > 0 {
		convergedMs = float64(results.FanoutConvergeBy) / 1e6
	}
	return results.Round{Latencies: lat, Metrics: map[string]float64{
		results.MP50ms:                 float64(benchrun.Percentile(lat, 0.5)) / 1e6,
		results.MP99ms:                 float64(benchrun.Percentile(lat, 0.99)) / 1e6,
		results.MMaxms:                 float64(benchrun.Percentile(lat, 1)) / 1e6,
		results.MWritesPerSec:          writeRate,
		results.MDelivered:             float64(delivered) / float64(written*len(sys.watchers)),
		results.MConvergeMs:            convergedMs,
		results.MUnconverged:           float64(unconverged),
		results.MCores:                 used.Seconds() / wall.Seconds(),
		results.MCPUPerDelivery:        float64(used.Microseconds()) / float64(max(delivered, 1)),
		results.MDeliveries:            float64(delivered),
		results.MRunsPerDelivery:       float64(proc.Runs) / float64(max(delivered, 1)),
		results.MSwitchesPerDelivery:   float64(proc.Switches) / float64(max(delivered, 1)),
		results.MAllocsPerDelivery:     float64(proc.Objects) / float64(max(delivered, 1)),
		results.MAllocBytesPerDelivery: float64(proc.Bytes) / float64(max(delivered, 1)),
		results.MGCShare:               proc.GCShare,
		results.MGCCycles:              float64(proc.Cycles),
		results.MLiveHeapMB:            float64(proc.LiveHeap) / (1 << 20),
	}}, nil
}

// stampedCopy is the generated object of key with its first condition's
// heartbeat time set to t, sharing everything else with base.
func stampedCopy(base *watchObject, t time.Time) *watchObject {
	n := *base
	n.Conditions = slices.Clone(base.Conditions)
	n.Conditions[0].LastHeartbeatTime = &t
	return &n
}

// fanInformers is how a lockstep fan-out variant's watchers are made.
type fanInformers int

const (
	// fanFeeds: an informer per watcher (framework.Watch with
	// framework.DecodeEach); those of one client share its feed, each
	// decoding every change.
	fanFeeds fanInformers = iota
	// fanCopies: the same, the feed decoding each change once and every
	// informer taking a deep copy of its own (framework.Watch's default
	// for a generated message).
	fanCopies
	// fanOwnStreams: the same, each informer with a stream of its own
	// (the benchmark-only option of internal/benchhook), as before feeds.
	fanOwnStreams
	// fanShared: one shared informer per client, its handlers sharing
	// the decoded objects.
	fanShared
)

func openLockstepFanout(mode fanInformers) func(int) (*fanSystem, error) {
	shared := mode == fanShared
	return func(watchers int) (*fanSystem, error) {
		var writer *framework.TopicWriter[watchObject]
		cfg := serverConfig()
		ls, err := startLockstep("127.0.0.1:0", cfg, func(srv *framework.Server) {
			writer = framework.ServeTopic[watchObject](srv, topicContract, topicName, framework.WithMaxWatchers(2*watchers+10), framework.WithMaxWatchersPerPeer(2*watchers+10))
			framework.ServeTopic[watchObject](srv, topicContract, idleTopic) // unused here; a server serves every declared topic
		})
		if err != nil {
			return nil, err
		}
		base := make([]*watchObject, results.TopicKeys)
		for k := range base {
			base[k] = watchObjectOf(k, time.Now())
			if err := writer.Set(base[k]); err != nil {
				return nil, err
			}
		}
		name := map[fanInformers]string{fanFeeds: results.VFanLockstep, fanCopies: results.VFanCopies,
			fanOwnStreams: results.VFanOwnStreams, fanShared: results.VFanShared}[mode]
		var opts []framework.WatchOption
		switch mode {
		case fanFeeds:
			opts = append(opts, framework.DecodeEach())
		case fanOwnStreams:
			opts = append(opts, benchhook.OwnStream().(framework.WatchOption), framework.DecodeEach())
		}
		sys := &fanSystem{name: name}
		tr := framework.NewTransport(nil)
		ctx, cancel := context.WithCancel(context.Background())
		var clients []*framework.Client
		var informers []*framework.Informer[watchObject]
		var factories []*framework.InformerFactory
		sys.close = func() error {
			cancel()
			for _, f := range factories {
				f.Shutdown()
			}
			for _, inf := range informers {
				inf.Stop()
			}
			for _, cl := range clients {
				_ = cl.Close()
			}
			tr.CloseIdleConnections()
			return ls.stop(true)
		}
		perClient := max(1, watchers/results.FanoutClients)
		var cl *framework.Client
		var si *framework.SharedInformer[watchObject]
		for i := range watchers {
			if i%perClient == 0 {
				cl, err = framework.NewClient(topicContract, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
					Endpoints: []string{ls.URL()}, Transport: tr, Logger: quiet})
				if err != nil {
					return nil, errors.Join(err, sys.close())
				}
				clients = append(clients, cl)
				if shared {
					f := framework.NewInformerFactory(cl, 0)
					if si, err = framework.ForTopic[watchObject](f, topicName); err != nil {
						return nil, errors.Join(err, sys.close())
					}
					f.Start(ctx)
					factories = append(factories, f)
				}
			}
			w := delivery.NewWatcher(results.TopicKeys)
			sys.watchers = append(sys.watchers, w)
			record := func(key string, obj *watchObject) {
				t := stampOf(obj)
				w.Got(delivery.KeyIndex(key), t.UnixNano(), time.Since(t), true, recording.Load())
			}
			h := framework.InformerHandlers[watchObject]{
				OnAdd:    record,
				OnUpdate: func(key string, _, obj *watchObject) { record(key, obj) },
			}
			if shared {
				si.AddEventHandler(h)
				continue
			}
			inf, err := framework.Watch(ctx, cl, topicName, h, opts...)
			if err != nil {
				return nil, errors.Join(err, sys.close())
			}
			informers = append(informers, inf)
		}
		syncCtx, syncCancel := context.WithTimeout(ctx, 2*time.Minute)
		defer syncCancel()
		for _, inf := range informers {
			if err := inf.WaitForSync(syncCtx); err != nil {
				return nil, errors.Join(err, sys.close())
			}
		}
		for _, f := range factories {
			if err := f.WaitForCacheSync(syncCtx); err != nil {
				return nil, errors.Join(err, sys.close())
			}
		}
		// A watcher has converged when it saw each key's last stamp
		// (level-based delivery may skip the versions in between).
		final := make([]int64, results.TopicKeys)
		sys.write = func(i int, t time.Time) (int64, error) {
			final[i%results.TopicKeys] = t.UnixNano()
			return t.UnixNano(), writer.Set(stampedCopy(base[i%results.TopicKeys], t))
		}
		sys.final = func() ([]int64, error) { return slices.Clone(final), nil }
		return sys, nil
	}
}

func openEtcdFanout(decode bool) func(int) (*fanSystem, error) {
	return func(watchers int) (*fanSystem, error) {
		etcd, err := startEtcd()
		if err != nil {
			return nil, err
		}
		name := results.VFanEtcd
		if !decode {
			name = results.VFanEtcdRaw
		}
		sys := &fanSystem{name: name}
		ctx, cancel := context.WithCancel(context.Background())
		var clients []*clientv3.Client
		var wg sync.WaitGroup
		sys.close = func() error {
			cancel()
			for _, c := range clients {
				_ = c.Close()
			}
			wg.Wait()
			return etcd.stop()
		}
		writerClient, err := etcd.client()
		if err != nil {
			return nil, errors.Join(err, sys.close())
		}
		clients = append(clients, writerClient)
		base := make([]*benchmsg.NodeStatus, results.TopicKeys)
		for k := range base {
			base[k] = stamped(k, time.Now())
		}
		put := func(ctx context.Context, i int, t time.Time) (int64, error) {
			n := *base[i%results.TopicKeys]
			n.Conditions = slices.Clone(n.Conditions)
			n.Conditions[0].LastHeartbeatTime = &t
			raw, err := json.Marshal(&n)
			if err != nil {
				return 0, err
			}
			resp, err := writerClient.Put(ctx, "/nodes/"+n.NodeName, string(raw))
			if err != nil {
				return 0, err
			}
			return resp.Header.Revision, nil
		}
		for k := range base {
			if _, err := put(ctx, k, time.Now()); err != nil {
				return nil, errors.Join(err, sys.close())
			}
		}
		perClient := max(1, watchers/results.FanoutClients)
		var cl *clientv3.Client
		for i := range watchers {
			if i%perClient == 0 {
				if cl, err = etcd.client(); err != nil {
					return nil, errors.Join(err, sys.close())
				}
				clients = append(clients, cl)
			}
			w := delivery.NewWatcher(results.TopicKeys)
			sys.watchers = append(sys.watchers, w)
			ch := cl.Watch(clientv3.WithRequireLeader(ctx), "/nodes/", clientv3.WithPrefix())
			wg.Add(1)
			go func() {
				defer wg.Done()
				for resp := range ch {
					for _, ev := range resp.Events {
						key := delivery.KeyIndex(string(ev.Kv.Key))
						if !decode {
							w.Got(key, ev.Kv.ModRevision, 0, false, recording.Load())
							continue
						}
						var n benchmsg.NodeStatus
						if err := json.Unmarshal(ev.Kv.Value, &n); err != nil || n.Conditions[0].LastHeartbeatTime == nil {
							continue
						}
						w.Got(key, ev.Kv.ModRevision, time.Since(*n.Conditions[0].LastHeartbeatTime), true, recording.Load())
					}
				}
			}()
		}
		// Keys the rounds do not write were written before the watches
		// began: each watcher starts out holding their revisions.
		resp, err := writerClient.Get(ctx, "/nodes/", clientv3.WithPrefix())
		if err != nil {
			return nil, errors.Join(err, sys.close())
		}
		for _, kv := range resp.Kvs {
			if k := delivery.KeyIndex(string(kv.Key)); k >= 0 && k < results.TopicKeys {
				for _, w := range sys.watchers {
					w.SetHeld(k, kv.ModRevision)
				}
			}
		}
		// The writer keeps up to 64 Puts in flight, so a durable store's
		// fsync latency throttles it only when etcd cannot keep up.
		inflight := make(chan struct{}, 64)
		var werr atomic.Value
		var timesMu sync.Mutex
		revTimes := map[int64]int64{}
		sys.timeOf = func(rev int64) (int64, bool) {
			timesMu.Lock()
			defer timesMu.Unlock()
			t, ok := revTimes[rev]
			return t, ok
		}
		var writes sync.WaitGroup
		sys.write = func(i int, t time.Time) (int64, error) {
			if e, _ := werr.Load().(error); e != nil {
				return 0, e
			}
			inflight <- struct{}{}
			writes.Add(1)
			go func() {
				defer func() { <-inflight; writes.Done() }()
				rev, err := put(ctx, i, t)
				if err != nil {
					werr.Store(err)
					return
				}
				timesMu.Lock()
				revTimes[rev] = t.UnixNano()
				timesMu.Unlock()
			}()
			return -int64(i) - 1, nil // timed by revision, through timeOf
		}
		sys.final = func() ([]int64, error) {
			writes.Wait()
			if e, _ := werr.Load().(error); e != nil {
				return nil, e
			}
			final := make([]int64, results.TopicKeys)
			resp, err := writerClient.Get(ctx, "/nodes/", clientv3.WithPrefix())
			if err != nil {
				return nil, err
			}
			for _, kv := range resp.Kvs {
				if k := delivery.KeyIndex(string(kv.Key)); k >= 0 && k < results.TopicKeys {
					final[k] = kv.ModRevision
				}
			}
			return final, nil
		}
		return sys, nil
	}
}

func openGRPCFanout(decode bool) func(int) (*fanSystem, error) {
	return func(watchers int) (*fanSystem, error) {
		g, err := startGRPC("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		name := results.VFanGRPC
		if !decode {
			name = results.VFanGRPCRaw
		}
		sys := &fanSystem{name: name}
		ctx, cancel := context.WithCancel(context.Background())
		var conns []interface{ Close() error }
		var wg sync.WaitGroup
		sys.close = func() error {
			cancel()
			for _, c := range conns {
				_ = c.Close()
			}
			wg.Wait()
			return g.stop()
		}
		perClient := max(1, watchers/results.FanoutClients)
		var gc benchpb.NodeControllerClient
		for i := range watchers {
			if i%perClient == 0 {
				conn, err := grpcConn(g.addr)
				if err != nil {
					return nil, errors.Join(err, sys.close())
				}
				conns = append(conns, conn)
				gc = benchpb.NewNodeControllerClient(conn)
			}
			w := delivery.NewWatcher(results.TopicKeys)
			sys.watchers = append(sys.watchers, w)
			stream, err := gc.Watch(ctx, &benchpb.WatchRequest{Watcher: fmt.Sprint(i)})
			if err != nil {
				return nil, errors.Join(err, sys.close())
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ch, err := stream.Recv()
					if err != nil {
						return
					}
					key := int(ch.Seq % results.TopicKeys)
					if !decode {
						w.Got(key, ch.Seq, 0, false, recording.Load())
						continue
					}
					var n benchpb.NodeStatus
					if err := proto.Unmarshal(ch.Object, &n); err != nil || len(n.Conditions) == 0 {
						continue
					}
					w.Got(key, ch.Seq, time.Since(n.Conditions[0].LastHeartbeatTime.AsTime()), true, recording.Load())
				}
			}()
		}
		deadline := time.Now().Add(time.Minute)
		for g.Watchers() < watchers {
			if time.Now().After(deadline) {
				return nil, errors.Join(fmt.Errorf("only %d of %d gRPC watch streams opened", g.Watchers(), watchers), sys.close())
			}
			time.Sleep(5 * time.Millisecond)
		}
		base0 := make([]*benchpb.NodeStatus, results.TopicKeys)
		for k := range base0 {
			base0[k] = toProto(stamped(k, time.Now()))
		}
		// Write i of a round is id base+i, so id % results.TopicKeys is its key;
		// base rises above every id of the rounds before.
		var base, last int64 = results.TopicKeys, 0
		final := make([]int64, results.TopicKeys)
		sys.write = func(i int, t time.Time) (int64, error) {
			id := base + int64(i)
			last, final[i%results.TopicKeys] = id, id
			n := base0[i%results.TopicKeys]
			n.Conditions[0].LastHeartbeatTime = timestamppb.New(t)
			return id, g.Publish(id, n)
		}
		sys.final = func() ([]int64, error) {
			base = (last/results.TopicKeys + 1) * results.TopicKeys
			return slices.Clone(final), nil
		}
		return sys, nil
	}
}
