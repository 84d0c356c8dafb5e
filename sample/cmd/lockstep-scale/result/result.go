// Package result is what one run of lockstep-scale measured: the program
// writes it, and make scale's harness (e2e/scale) keeps it in
// docs/scale/results.json and writes the report from it, so both read the
// one definition.
package result

import "encoding/json"

// ExitStopped is lockstep-scale's exit status when a signal (SIGINT or
// SIGTERM) stopped it before it finished; make scale's harness reads it to
// record the run as stopped, which says nothing of what the path holds.
const ExitStopped = 3

// Result is what one run of one path at one node count measured, as
// lockstep-scale reports it, with what make scale's harness adds (the
// date, the command, why a run did not finish).
type Result struct {
	Path        string `json:"path"`
	Nodes       int    `json:"nodes"`
	PodsPerNode int    `json:"podsPerNode"`
	PodsPlaced  int    `json:"podsPlaced"`
	// PodsNotRunning is how many of the pods placed were not Running when
	// their count stopped growing for a minute (or after 10 minutes).
	PodsNotRunning int    `json:"podsNotRunning,omitempty"`
	LoadStart      string `json:"loadAverageAtStart"`
	LoadEnd        string `json:"loadAverageAtEnd"`
	// LoadMax is the highest 1-minute load average seen during the run
	// (sampled every 5 s).
	LoadMax         float64 `json:"loadAverageMax,omitempty"`
	RegisterSeconds float64 `json:"secondsToRegister"`
	// ReadyAtRegistration, with --ready-fraction below 1, is how many
	// nodes (the victims among them) were Ready when registration was
	// taken as done.
	ReadyAtRegistration int     `json:"readyAtRegistration,omitempty"`
	PlaceSeconds        float64 `json:"secondsToPlace"`
	// The steady state: its window, the durable writes in it (etcd's own
	// count, and the API server's writes of node liveness and status and
	// of pods), and the CPU and RSS of every process.
	SteadySeconds            float64            `json:"steadySeconds"`
	EtcdPutsPerSec           float64            `json:"etcdPutsPerSecond"`
	NodeWritesPerSec         float64            `json:"nodeWritesPerSecond"`
	PodWritesPerSec          float64            `json:"podWritesPerSecond"`
	WritesPerSec             map[string]float64 `json:"apiserverWritesPerSecond"`
	PlacementPodWritesPerSec float64            `json:"podWritesPerSecondWhilePlacing"`
	Cores                    map[string]float64 `json:"cores"`
	RSSMiB                   map[string]float64 `json:"rssMiB"`
	PeakRSSMiB               map[string]float64 `json:"peakRSSMiB"`
	HollowKiBPerNode         float64            `json:"hollowKiBPerNode"`
	StatusReportsPerSec      float64            `json:"statusReportsPerSecond"`
	NodeObjects              map[string]int64   `json:"nodeObjectWrites,omitempty"`
	// HeartbeatP99Ms is over the whole run, the start's handshakes
	// included; SteadyHeartbeat* over the steady window only (every node
	// registered, every pod placed and Running): P9's figure. Each is the
	// upper bound of a histogram bucket, at most 2 % above the true value.
	HeartbeatP99Ms       float64 `json:"heartbeatP99Ms"`
	Heartbeats           int64   `json:"heartbeats"`
	SteadyHeartbeats     int64   `json:"steadyHeartbeats,omitempty"`
	SteadyHeartbeatP50Ms float64 `json:"steadyHeartbeatP50Ms,omitempty"`
	SteadyHeartbeatP99Ms float64 `json:"steadyHeartbeatP99Ms,omitempty"`
	SteadyHeartbeatMaxMs float64 `json:"steadyHeartbeatMaxMs,omitempty"`
	// BindToRunning* are over the pods placed, all bound at once while the
	// nodes also start their pods; SteadyBindToRunning* over the pods bound
	// one at a time during the steady window (SteadyBinds of them, at
	// --steady-binds-per-second; lockstep path), as a running cluster binds
	// them: P9's figure. SteadyNotRunning of those were not Running 30 s
	// after the window.
	BindToRunningP99Ms       float64 `json:"bindToRunningP99Ms"`
	BindToRunningP50Ms       float64 `json:"bindToRunningP50Ms"`
	SteadyBinds              int     `json:"steadyBinds,omitempty"`
	SteadyBindToRunningP50Ms float64 `json:"steadyBindToRunningP50Ms,omitempty"`
	SteadyBindToRunningP99Ms float64 `json:"steadyBindToRunningP99Ms,omitempty"`
	SteadyNotRunning         int     `json:"steadyNotRunning,omitempty"`
	// SteadyLapses (lockstep path) counts the sessions of live nodes that
	// lapsed in the steady window (the victims' left out), SteadyFlaps the
	// live nodes whose health went from Ready to not Ready in it, and Flaps
	// those over the whole run: false verdicts of a short session TTL on a
	// loaded machine.
	// TLSFullHandshakes and TLSResumedHandshakes (lockstep path) count
	// the node controller's TLS handshakes over the run, full (a
	// signature and a verification each side) or resumed;
	// TLSFullHandshakesPlacing the full ones while the pods were placed.
	TLSFullHandshakes        int64 `json:"tlsFullHandshakes,omitempty"`
	TLSResumedHandshakes     int64 `json:"tlsResumedHandshakes,omitempty"`
	TLSFullHandshakesPlacing int64 `json:"tlsFullHandshakesPlacing,omitempty"`
	SteadyLapses             int64 `json:"steadyLapses"`
	SteadyFlaps              int64 `json:"steadyFlaps"`
	Flaps                    int64 `json:"flaps"`
	// KillNoticedMs: from SIGKILL until the API server shows the node's
	// Ready condition not True (or, without an API server, until the node
	// controller holds it Unknown); KillNoticedInMemoryMs (lockstep path):
	// until the node controller holds it Unknown.
	KillNoticedMs         []int64 `json:"killNoticedMs"`
	KillNoticedP99Ms      int64   `json:"killNoticedP99Ms"`
	KillNoticedInMemoryMs []int64 `json:"killNoticedInMemoryMs,omitempty"`
	LostLiveNodes         int     `json:"liveNodesLost"`
	SessionTTLSeconds     float64 `json:"sessionTTLSeconds,omitempty"`
	NodeGraceSeconds      float64 `json:"nodeGraceSeconds,omitempty"`
	SourceAddrs           bool    `json:"sourceAddressPerNode"`
	// HollowGOGC is the main hollow process's GOGC (0: Go's default), on
	// either path: it moves the simulator's RSS and its heartbeats' tail,
	// so runs with different values are not compared.
	HollowGOGC int `json:"hollowGOGC,omitempty"`
	// The lockstep path's settings that move its figures: pods bound in
	// the steady window per second (it carries binds, so its heartbeats
	// are measured beside them), the hollow process's start rate and its
	// groups a second, and whether nodes resume TLS sessions.
	SteadyBindsPerSec float64 `json:"steadyBindsPerSecond,omitempty"`
	StartRate         int     `json:"startRate,omitempty"`
	StartTicks        int     `json:"startTicks,omitempty"`
	TLSResumption     bool    `json:"tlsResumption,omitempty"`
	// NodeControllerGOGC and NodeControllerMemoryLimitMiB are the node
	// controller process's GOGC and soft memory limit (0: Go's defaults);
	// PlaceBindsPerSecLimit is the pace the placement's binds were held
	// to (0: as fast as --bind-concurrency binds go).
	NodeControllerGOGC           int     `json:"nodeControllerGOGC,omitempty"`
	NodeControllerMemoryLimitMiB int     `json:"nodeControllerMemoryLimitMiB,omitempty"`
	PlaceBindsPerSecLimit        float64 `json:"placeBindsPerSecondLimit,omitempty"`
	// LeaseEverySeconds (Kubernetes path) is how often its hollow nodes
	// renewed their Leases: every 10 s as Kubernetes' kubelets do, which
	// P10 compares against, or faster (make scale-quick's 2 s), which
	// multiplies that path's writes.
	LeaseEverySeconds float64 `json:"leaseEverySeconds,omitempty"`
	// HollowProcesses is how many processes the hollow nodes that are not
	// killed ran in (lockstep path; one before it was recorded).
	HollowProcesses int `json:"hollowProcesses,omitempty"`
	// HollowStartRates is the start rate each of those processes used,
	// its share of StartRate (the remainder to the first ones), and
	// HollowStartGroupsPerSec the groups of nodes it started a second:
	// StartTicks, or fewer where its rate is not a multiple of them.
	HollowStartRates        []int     `json:"hollowStartRates,omitempty"`
	HollowStartGroupsPerSec []float64 `json:"hollowStartGroupsPerSecond,omitempty"`
	// ResyncsRequested and Resumes (lockstep path) count, over the whole
	// run, the full resyncs the node controller asked of kubelet sessions
	// and the nodes held Unknown that their kubelet's new session resumed
	// without one: how sessions that lapsed came back.
	ResyncsRequested int64 `json:"resyncsRequested,omitempty"`
	Resumes          int64 `json:"resumes,omitempty"`
	// BindsPerSec is how fast the pods were bound (lockstep: through the
	// node controller's Bind; Kubernetes: created and bound through the
	// API server), over the placement.
	BindsPerSec float64 `json:"bindsPerSecond,omitempty"`

	// Set by the harness, never by lockstep-scale: omitted when empty, and
	// kept by ReadRun, so that the program's output does not erase them.
	Date    string `json:"date,omitempty"`
	Command string `json:"command,omitempty"`
	// ControllerManagerArgs are the flags the Kubernetes path's
	// kube-controller-manager ran with beyond the harness's own (make
	// scale-quick's shorter node monitor grace period); empty: its node
	// lifecycle controller's defaults, which P10 compares against.
	ControllerManagerArgs string `json:"controllerManagerArgs,omitempty"`
	// Failed, if not empty, says why the run did not finish, or (set by
	// lockstep-scale itself, which then exits with status 1) why its
	// figures are not the whole run's: some hollow processes did not
	// report theirs. The largest N a path holds is the largest without it.
	Failed string `json:"failed,omitempty"`
	// Stopped says the run was stopped from outside (a signal) before it
	// finished: its record says nothing of what the path holds, and does
	// not replace an earlier record of the same path and node count.
	Stopped bool `json:"stopped,omitempty"`
}

// ReadRun reads lockstep-scale's output (one Result in JSON) into r, which
// the harness has filled with the run's date and command: the program
// knows neither, so an output that names them empty (an older program's)
// must not replace the harness's.
func (r *Result) ReadRun(out []byte) error {
	date, command, kcm := r.Date, r.Command, r.ControllerManagerArgs
	err := json.Unmarshal(out, r)
	r.Date, r.Command, r.ControllerManagerArgs = date, command, kcm
	return err
}
