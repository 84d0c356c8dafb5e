package results

import (
	"fmt"
	"time"
)

// Variant names of the unary workload, as the report prints them.
const (
	// VLockstep is the default client, which batches automatically;
	// VLockstepUnbatched the same with AutoBatch.Disabled.
	VLockstep          = "lockstep"
	VLockstepUnbatched = "lockstep, auto-batching off"
	VLockstepFork      = "lockstep fork mode (N-1 client)"
	// The transport lever: the default client over HTTP/2 without TLS.
	VLockstepH2C1 = "lockstep over h2c, 1 connection"
	VLockstepH2C4 = "lockstep over h2c, 4 connections"
	VGRPCProto    = "gRPC+protobuf"
	VGRPCJSON     = "gRPC+JSON"
	VNetHTTP      = "net/http+encoding/json"
	VConnectJSON  = "connect-go JSON"
	VConnectProto = "connect-go proto"
	// The second rows: both sides mutual TLS (a throwaway CA made at
	// start, ECDSA P-256), each beside its plaintext row.
	VLockstepMTLS  = "lockstep, mutual TLS"
	VGRPCProtoMTLS = "gRPC+protobuf, mutual TLS"
	VNetHTTPMTLS   = "net/http+encoding/json, mutual TLS"
)

// PlaintextOf maps each mutual-TLS variant to the same variant in
// plaintext; a variant that is not in it runs in plaintext.
var PlaintextOf = map[string]string{
	VLockstepMTLS: VLockstep, VGRPCProtoMTLS: VGRPCProto, VNetHTTPMTLS: VNetHTTP,
	VBeatLockstepMTLS: VBeatLockstep, VBeatGRPCMTLS: VBeatGRPC,
	VReconnectLSMTLS: VReconnectLS, VReconnectGRMTLS: VReconnectGR,
}

// UnaryCallers are the caller counts of the unary workload.
var UnaryCallers = []int{1, 64}

// UnaryWorkload names the unary workload at a caller count.
func UnaryWorkload(callers int) string { return fmt.Sprintf("unary/%d", callers) }

// Metric names of the unary workload.
const (
	MCallsPerSec = "calls/s"
	MP50         = "p50 µs"
	MP99         = "p99 µs"
	MCPUPerCall  = "CPU µs/call"
	MFailed      = "failed"
)

// Workload and metric names of the validation workload (P8).
const (
	WValidation      = "validation"
	VGeneratedDecode = "generated decode + Validate"
	VSchemaDecode    = "decode to any + jsonschema/v5"
	MNsPerOp         = "ns/op"
	MMismatches      = "verdict mismatches"
	MCorpus          = "corpus size"
)

// Workload and variant names of crash detection.
const (
	WCrash    = "crash detection"
	VCrashLS  = "lockstep (client notices)"
	VCrashGRP = "gRPC default (ClientConn leaves READY)"
	MP50ms    = "p50 ms"
	MP99ms    = "p99 ms"
	MMaxms    = "max ms"
	MSamples  = "samples"
	// MDialsPerS is how often a reconnecting client dialled its server's
	// address while nothing listened there (dials per second of dark time).
	MDialsPerS = "dials/s dark"
)

// Workload and variant names of the reconnect gap (P6).
const (
	WReconnect   = "reconnect gap"
	VReconnectLS = "lockstep (default: shared prober)"
	VReconnectGR = "gRPC default backoff"
	// VReconnectLSReady is lockstep's client fed by a readiness source
	// (discovery.Manual) that says the server is not ready when it stops
	// and ready again once its replacement listens, as an EndpointSlice
	// informer would: the prober dials at once instead of polling.
	VReconnectLSReady = "lockstep, readiness source announces the restart"
	// The second rows, both sides with mutual TLS.
	VReconnectLSMTLS = "lockstep (shared prober), mutual TLS"
	VReconnectGRMTLS = "gRPC default backoff, mutual TLS"
)

// Workload, variant and metric names of the heartbeat and memory
// workloads (P3, P7).
const (
	WHeartbeat    = "heartbeats"
	VBeatLockstep = "lockstep heartbeats"
	VBeatEtcd     = "etcd durable Put"
	VBeatGRPC     = "gRPC unary ping"
	// The second rows, both sides with mutual TLS.
	VBeatLockstepMTLS = "lockstep heartbeats, mutual TLS"
	VBeatGRPCMTLS     = "gRPC unary ping, mutual TLS"
	MServerCPUPer     = "server CPU µs/beat"
	MTotalCPUPer      = "CPU µs/beat"
	MServerCores      = "server cores"
	MBeatsPerSec      = "beats/s"
	MSessions         = "sessions"
	WMemory           = "memory"
	VMemSession       = "idle session"
	VMemWatcher       = "idle watcher"
	MServerBytes      = "server B/item"
	MClientBytes      = "client B/item"
	MItems            = "items"
)

// Variant and metric names of the fan-out workloads (P4, P4s, P5).
const (
	VFanLockstep   = "lockstep topic, informer per watcher, each decoding"
	VFanCopies     = "lockstep topic, informer per watcher, a copy each of one decode per client"
	VFanShared     = "lockstep topic, shared informers"
	VFanOwnStreams = "lockstep topic, informer per watcher, a stream each" // fanout-bench only: before feeds
	VFanEtcd       = "etcd watch + encoding/json"
	VFanEtcdRaw    = "etcd watch, no decode"
	VFanGRPC       = "gRPC stream per watcher + protobuf"
	VFanGRPCRaw    = "gRPC stream per watcher, no decode"
	MWritesPerSec  = "writes/s"
	MDelivered     = "delivered/write/watcher"
	MConvergeMs    = "converged ms"
	MUnconverged   = "unconverged watchers"
	MCores         = "cores"
	// MCPUPerDelivery is the process's CPU (writer, servers, watchers) per
	// object a watcher was handed: steadier than latency on a busy host.
	MCPUPerDelivery = "CPU µs/delivery"
	// MDeliveries counts the objects handed to watchers; the per-delivery
	// figures of the Go runtime (package procstat) divide by it: goroutine
	// runs and thread switches (wakeups), heap allocations, and the
	// collector's share of the process's CPU.
	MDeliveries            = "deliveries"
	MRunsPerDelivery       = "goroutine runs/delivery"
	MSwitchesPerDelivery   = "thread switches/delivery"
	MAllocsPerDelivery     = "allocs/delivery"
	MAllocBytesPerDelivery = "alloc B/delivery"
	MGCShare               = "GC CPU share"
	MGCCycles              = "GC cycles"
	MLiveHeapMB            = "live heap MB"
	FanoutClients          = 50 // client processes the watchers are spread over
	FanoutConvergeBy       = 10 * time.Second
)

// FanoutWorkload names a fan-out workload by watchers and write rate.
func FanoutWorkload(watchers, rate int) string {
	return fmt.Sprintf("fan-out/%d watchers/%d writes/s", watchers, rate)
}

// Sizes of the fan-out and memory workloads.
const (
	// TopicKeys is how many nodes the fan-out topic holds.
	TopicKeys = 100
	// MaxSessions and MaxWatchers are the idle-memory workload's counts.
	MaxSessions = 10000
	MaxWatchers = 10000
	// WatchersPerClient is how many idle watchers share one client
	// (session) in the idle-memory workload.
	WatchersPerClient = 100
	// WatchBuffer is how many changes the gRPC fan-out anchor queues for
	// a watcher before it drops changes for it.
	WatchBuffer = 1024
)

// Lengths are how long and how often the workloads measure, in a full run
// and in a quick one; the suite runs them and the report states them, so
// both read them here.
type Lengths struct {
	// UnaryRound is one unary variant's time per round: 3 s, the shortest
	// round the suite's method asks for (3-5 s). At 1 caller it gathers
	// over 15,000 calls, at 64 callers over 75,000. The unary workload is
	// 13 variants at 2 caller counts over 3 rounds: 78 rounds, 234 s
	// measured (156 s at the 2 s it was).
	UnaryRound time.Duration
	// ReconnectPairs server and client pairs run in parallel per round,
	// ReconnectTrials trials each, one after the other.
	ReconnectPairs, ReconnectTrials int
	// ReconnectDark is the longest dark time (the shortest is 0.2 s).
	ReconnectDark time.Duration
	// SelectChanges is how many changes a selected-watch run makes, at
	// 100/s (its idle window is as long): 300, 3 s of changes, whose
	// deliveries give each row about 1,000 latencies over 3 rounds. At 600
	// the workload's 18 runs took 3 min 55 s of a full run's 18 min 28 s,
	// and a cold make bench (2 min of compiling the suite first) went past
	// 20 min.
	SelectChanges int
}

// LengthsOf returns the lengths of a full run, or of a quick one.
func LengthsOf(quick bool) Lengths {
	if quick {
		return Lengths{UnaryRound: 300 * time.Millisecond, ReconnectPairs: 3, ReconnectTrials: 1,
			ReconnectDark: 500 * time.Millisecond, SelectChanges: 200}
	}
	return Lengths{UnaryRound: 3 * time.Second, ReconnectPairs: 40, ReconnectTrials: 1,
		ReconnectDark: 10 * time.Second, SelectChanges: 300}
}
