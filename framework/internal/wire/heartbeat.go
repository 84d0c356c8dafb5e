package wire

// HeartbeatRequest is the body of POST /lockstep/heartbeat: the sessions
// of one client process at this server, renewed together.
type HeartbeatRequest struct {
	Sessions []string `json:"sessions"`
}

// HeartbeatAnswer is the body of a heartbeat's answer.
type HeartbeatAnswer struct {
	// Lost lists the sessions the server does not hold (lapsed, closed, or
	// from before a restart): their clients must handshake again.
	Lost []string `json:"lost"`
	// Resync lists the sessions whose client should send its full state
	// again.
	Resync []string `json:"resync"`
	// Topics says, for every topic of the renewed sessions' contracts the
	// server holds, whether it has a live writer.
	Topics []TopicWriterReport `json:"topics,omitempty"`
}

// TopicWriterReport says whether a topic a server holds has a live
// writer: server-written, its writer is attached; client-written, any
// client instance writes it. Heartbeat answers carry one per topic of the
// contracts of the sessions they renew.
type TopicWriterReport struct {
	Contract string `json:"contract"`
	Version  string `json:"version"`
	Topic    string `json:"topic"`
	Writer   bool   `json:"writer"`
}
