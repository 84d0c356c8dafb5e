package watch

// The rules of watch routing: which endpoints a feed's stream may take,
// which it takes first for a server-written topic, when it leaves the one
// it took, and what the blocked log says while none will do. They read
// the client's endpoints through [Endpoint] and [Session]; the client
// keeps the endpoints, their sessions and the wait ([Router]).

import "strings"

// Endpoint is one of the client's endpoints as watch routing reads it.
type Endpoint interface {
	// URL names the endpoint in the blocked log.
	URL() string
	// Why says, for the blocked log, what keeps the endpoint from carrying
	// anything now (its state, its last error).
	Why() string
	// Session returns the endpoint's routable session, nil while it has
	// none or that session agreed no version.
	Session() Session
}

// Session is an endpoint's routable session as watch routing reads it.
type Session interface {
	// Version is the contract version the session agreed.
	Version() string
	// Watchable reports whether a watch of topic that selects by fields
	// can travel at that version: the client's own, or a fork version that
	// converts the topic. When it cannot, why says so.
	Watchable(topic string, fields []string) (why string, ok bool)
	// Writers is what the client knows of the topics' writers at the
	// session's server.
	Writers() *Writers
}

// Carriers returns the endpoints of eps whose session can carry a watch
// of w.
func Carriers[E Endpoint](eps []E, w Want) []E {
	out := make([]E, 0, len(eps))
	for _, e := range eps {
		if s := e.Session(); s != nil {
			if _, ok := s.Watchable(w.Topic, w.Fields); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// Candidates returns the endpoints of ready, the client's routable ones,
// that a stream of w takes in turn: those whose session can carry it and,
// for a server-written topic, the replicas whose writer is attached, else
// those it knows nothing of yet. It returns none while every replica it
// can reach says the topic has no writer: the stream waits.
func Candidates[E Endpoint](ready []E, w Want) []E {
	eps := Carriers(ready, w)
	if !w.WriterAware {
		return eps
	}
	live, unknown, _ := splitByWriter(w.Topic, eps)
	if len(live) > 0 {
		return live
	}
	return unknown
}

// WriterMoved reports whether a stream of w should leave the session s it
// goes through though s is still routable: for a server-written topic,
// the topic's writer at s is gone while another of the ready endpoints
// (read only then) carries the watch with its writer attached.
func WriterMoved[E Endpoint](s Session, w Want, ready func() []E) bool {
	if !w.WriterAware {
		return false
	}
	if live, known := s.Writers().Get(w.Topic); !known || live {
		return false
	}
	live, _, _ := splitByWriter(w.Topic, Carriers(ready(), w))
	return len(live) > 0
}

// Why says, for the blocked log, why no endpoint of eps (every endpoint
// the client knows) carries a watch of w now: each endpoint's state, and
// for one whose session agreed a version the watch cannot travel at, or
// whose server says the topic has no writer, that version and why not.
func Why[E Endpoint](eps []E, w Want) string {
	if len(eps) == 0 {
		return "no endpoint known"
	}
	parts := make([]string, len(eps))
	for i, e := range eps {
		s := e.Session()
		if s == nil {
			parts[i] = e.Why()
			continue
		}
		parts[i] = e.URL() + " agreed " + s.Version()
		if why, ok := s.Watchable(w.Topic, w.Fields); !ok {
			parts[i] += ": " + why
		} else if live, known := s.Writers().Get(w.Topic); known && !live {
			parts[i] += ": topic " + w.Topic + " has no writer attached"
		}
	}
	return strings.Join(parts, "; ")
}

// splitByWriter splits eps, endpoints that can carry a watch of topic, by
// what is known of topic's writer there: live, unknown, and writer-less.
// An endpoint whose session is gone meanwhile is left out.
func splitByWriter[E Endpoint](topic string, eps []E) (live, unknown, none []E) {
	for _, e := range eps {
		s := e.Session()
		if s == nil {
			continue
		}
		switch l, known := s.Writers().Get(topic); {
		case !known:
			unknown = append(unknown, e)
		case l:
			live = append(live, e)
		default:
			none = append(none, e)
		}
	}
	return live, unknown, none
}
