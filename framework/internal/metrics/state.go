package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	sessionsDesc = prometheus.NewDesc("lockstep_sessions",
		"Live sessions held by this process's servers, by contract and agreed version (in fork mode: who still speaks an old version).",
		[]string{"contract", "version"}, nil)
	topicKeysDesc = prometheus.NewDesc("lockstep_topic_keys",
		"Objects a topic holds, by contract, version and topic.", []string{"contract", "version", "topic"}, nil)
	topicWritersDesc = prometheus.NewDesc("lockstep_topic_writers",
		"Writers that own keys of a topic or were seen writing it; 0 means nobody keeps it current.", []string{"contract", "version", "topic"}, nil)
	topicChangesDesc = prometheus.NewDesc("lockstep_topic_changes_total",
		"Changes applied to a topic since the server started, by kind (set or delete).", []string{"contract", "version", "topic", "kind"}, nil)
	watchersDesc = prometheus.NewDesc("lockstep_watchers",
		"Live watch streams of a topic.", []string{"contract", "version", "topic"}, nil)
	watchQueuedDesc = prometheus.NewDesc("lockstep_watch_queued",
		"Keys waiting to be sent to a topic's watchers now, summed over its watchers (bounded by keys × watchers).", []string{"contract", "version", "topic"}, nil)
	coalescedDesc = prometheus.NewDesc("lockstep_watch_coalesced_total",
		"Changes replaced in a watcher's queue by a later change of the same key before being sent.", []string{"contract", "version", "topic"}, nil)
	endpointsDesc = prometheus.NewDesc("lockstep_client_endpoints",
		"Endpoints of this process's clients by contract and state (ready, refused, unreachable, draining, connecting).", []string{"contract", "state"}, nil)
	blockedNowDesc = prometheus.NewDesc("lockstep_client_blocked_calls",
		"Calls waiting for a compatible peer now, by contract.", []string{"contract"}, nil)
)

// stateCollector reads the watched servers' and clients' state at scrape
// time: nothing is updated per event for these.
type stateCollector struct{ m *Set }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, topicKeysDesc, topicWritersDesc, topicChangesDesc,
		watchersDesc, watchQueuedDesc, coalescedDesc, endpointsDesc, blockedNowDesc} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	servers := append([]*Server(nil), c.m.servers...)
	clients := append([]*Client(nil), c.m.clients...)
	c.m.mu.Unlock()
	collectServers(ch, servers)
	collectClients(ch, clients)
}

// collectServers sends the sessions' and topics' gauges, summed over the
// servers by their labels.
func collectServers(ch chan<- prometheus.Metric, servers []*Server) {
	sessions := map[Session]int{}
	type topicKey [3]string
	topics := map[topicKey]*Topic{}
	for _, srv := range servers {
		for _, sess := range srv.Sessions() {
			sessions[sess]++
		}
		for _, t := range srv.Topics() {
			k := topicKey{t.Contract, t.Version, t.Topic}
			sum := topics[k]
			if sum == nil {
				sum = &Topic{}
				topics[k] = sum
			}
			sum.Keys += t.Keys
			sum.Writers += t.Writers
			sum.Watchers += t.Watchers
			sum.Sets += t.Sets
			sum.Deletes += t.Deletes
			sum.Coalesced += t.Coalesced
			sum.Queued += t.Queued
		}
	}
	for k, n := range sessions {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), k.Contract, k.Version)
	}
	for k, t := range topics {
		ch <- prometheus.MustNewConstMetric(topicKeysDesc, prometheus.GaugeValue, float64(t.Keys), k[:]...)
		ch <- prometheus.MustNewConstMetric(topicWritersDesc, prometheus.GaugeValue, float64(t.Writers), k[:]...)
		ch <- prometheus.MustNewConstMetric(watchersDesc, prometheus.GaugeValue, float64(t.Watchers), k[:]...)
		ch <- prometheus.MustNewConstMetric(watchQueuedDesc, prometheus.GaugeValue, float64(t.Queued), k[:]...)
		ch <- prometheus.MustNewConstMetric(coalescedDesc, prometheus.CounterValue, float64(t.Coalesced), k[:]...)
		ch <- prometheus.MustNewConstMetric(topicChangesDesc, prometheus.CounterValue, float64(t.Sets), k[0], k[1], k[2], "set")
		ch <- prometheus.MustNewConstMetric(topicChangesDesc, prometheus.CounterValue, float64(t.Deletes), k[0], k[1], k[2], "delete")
	}
}

// collectClients sends the endpoints' and blocked calls' gauges, summed
// over the clients by contract.
func collectClients(ch chan<- prometheus.Metric, clients []*Client) {
	endpoints := map[[2]string]int{}
	blocked := map[string]int{}
	for _, cl := range clients {
		for _, state := range cl.EndpointStates() {
			endpoints[[2]string{cl.Contract, state}]++
		}
		blocked[cl.Contract] += cl.Blocked()
	}
	for k, n := range endpoints {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for contract, n := range blocked {
		ch <- prometheus.MustNewConstMetric(blockedNowDesc, prometheus.GaugeValue, float64(n), contract)
	}
}
