package framework

import (
	"fmt"

	"github.com/lockstep-dev/lockstep/framework/internal/model"
	"github.com/lockstep-dev/lockstep/handshake"
)

// Compatible versions: a contract version that derives from an earlier one
// through a change lockstep-gen diff finds compatible both ways (an added
// optional field, an added method or topic) carries the conversions between
// the two, so that both sides speak both versions by default: a client of
// it also offers the earlier version, converting its calls down and the
// answers up, and a server also serves it, converting calls up and answers
// and topic objects down. No fork mode, no hand-written code. A session
// still speaks exactly one version with its exact fingerprint.
//
// The earlier version may itself derive from a yet earlier one: a
// contract speaks its whole chain, nearest first, up to
// [MaxCompatibleVersions] earlier versions.

// MaxCompatibleVersions bounds how many earlier versions a chain of
// compatible versions keeps offered and served: a contract speaks itself
// and at most this many versions it derives from, nearest first. Four
// keeps a peer three or four minor releases behind talking, as Kubernetes'
// version skew policy keeps a kubelet three minor releases behind its API
// server, while each version served costs a converted copy of every
// topic; a peer further behind is refused with version_mismatch and
// named in the refusal, like any other. A hello carries at most 64
// offers ([handshake.MaxOffers]), so the chain leaves room for fork mode.
const MaxCompatibleVersions = 4

// Compatible is the earlier version a contract version derives from, with
// the conversions of every method and server-written topic the earlier
// version declares. Generated packages build it, from conversions that
// codegen/diff proves lose nothing either way; [NewCompatibleContract]
// attaches it to the later version.
type Compatible struct {
	// Contract is the earlier version.
	Contract *Contract
	// Methods converts each method of the earlier version, by name; build
	// each with [ConvertCompatibleMethod].
	Methods map[string]CompatibleMethod
	// Topics converts the objects of each server-written topic of the
	// earlier version, by name; build each with [ConvertCompatibleTopic].
	Topics map[string]CompatibleTopic
}

// CompatibleMethod converts one method's messages between two compatible
// versions, in the four directions the two sides need. Build it with
// [ConvertCompatibleMethod].
type CompatibleMethod struct {
	// client converts the client's requests down and the answers up.
	client MethodConversion
	// serve registers, on s, the earlier version's method as served by the
	// later version's handler (request up, answer down).
	serve func(s *Server, earlier, later *Contract, method string)
}

// ConvertCompatibleMethod builds the conversions of a method between a
// later version (Req, Resp) and the compatible version it derives from
// (OldReq, OldResp): requests up and down, answers up and down. A server
// uses reqUp and respDown to serve the earlier version with the later
// version's handler, a client reqDown and respUp to call a server of the
// earlier version. For batch methods they convert each item.
//
// For generated code: lockstep-gen emits one per method of a version whose
// change from the one it derives from (forkFrom) is compatible both ways.
func ConvertCompatibleMethod[Req, Resp, OldReq, OldResp any](
	reqUp func(*OldReq) (*Req, error), reqDown func(*Req) (*OldReq, error),
	respUp func(*OldResp) (*Resp, error), respDown func(*Resp) (*OldResp, error)) CompatibleMethod {
	return CompatibleMethod{
		client: ConvertMethod(reqDown, respUp),
		serve: func(s *Server, earlier, later *Contract, method string) {
			if decl, _ := later.Method(method); decl.Batch {
				ForkBatch(s, earlier, later, method, reqUp, respDown)
				return
			}
			ForkUnary(s, earlier, later, method, reqUp, respDown)
		},
	}
}

// CompatibleTopic converts the objects of one server-written topic
// between two compatible versions. Build it with [ConvertCompatibleTopic].
type CompatibleTopic struct {
	// client converts the earlier form's objects up, for a client's watch
	// of an endpoint that agreed the earlier version.
	client TopicConversion
	// fork makes s serve the earlier version's form of the topic, written
	// through later (a *TopicWriter of the later version's object), and
	// returns the earlier form's writer, through which a yet earlier
	// form can be forked in turn.
	fork func(s *Server, earlier *Contract, later any, opts []TopicOption) any
}

// ConvertCompatibleTopic builds the conversions of a server-written topic's
// objects between a later version (Obj) and the compatible version it
// derives from (OldObj). A server uses down to serve the earlier form,
// converting each change once, whatever the number of its watchers; a
// client watching a server of the earlier version uses up, as a client in
// fork mode does ([ConvertTopic]).
//
// For generated code: lockstep-gen emits one per server-written topic of a
// version whose change from the one it derives from (forkFrom) is
// compatible both ways.
func ConvertCompatibleTopic[Obj, OldObj any](up func(*OldObj) (*Obj, error), down func(*Obj) (*OldObj, error)) CompatibleTopic {
	return CompatibleTopic{
		client: ConvertTopic(up),
		fork: func(s *Server, earlier *Contract, later any, opts []TopicOption) any {
			w, ok := later.(*TopicWriter[Obj])
			if !ok {
				panic(fmt.Sprintf("lockstep: topic of %s %s: the compatible conversion expects a %T, got %T",
					earlier.Name(), earlier.Version(), w, later))
			}
			return mirrorTopic(s, earlier, w, down, opts)
		},
	}
}

// NewCompatibleContract is [NewContract] for a version that derives from
// from.Contract through a change compatible both ways: the contract carries
// the conversions, so that clients of it also offer the earlier version
// (and the versions that one derives from, up to [MaxCompatibleVersions]),
// and [ServeCompatible] and [ServeTopic] serve them. It refuses an earlier
// version that is not one of the same contract, a method or server-written
// topic of it without a conversion, and a client-written topic in it
// (the runtime does not convert topics clients write).
func NewCompatibleContract(m handshake.Contract, from Compatible) (*Contract, error) {
	c, err := NewContract(m)
	if err != nil {
		return nil, err
	}
	if err := checkCompatible(c, from); err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: derives from %w", c.Name(), c.Version(), err)
	}
	c.derivesFrom = &from
	return c, nil
}

// MustCompatibleContract is [NewCompatibleContract] for generated code and
// package-level variables: it panics on error.
func MustCompatibleContract(m handshake.Contract, from Compatible) *Contract {
	c, err := NewCompatibleContract(m, from)
	if err != nil {
		panic(err)
	}
	return c
}

// checkCompatible checks that from is an earlier version of c with a
// conversion for each of its methods and server-written topics, each of
// which c declares too (model.CheckConversions).
func checkCompatible(c *Contract, from Compatible) error {
	if from.Contract == nil {
		return fmt.Errorf("no contract")
	}
	if err := checkForkPair(from.Contract, c); err != nil {
		return err
	}
	methods := map[string]bool{}
	for m, conv := range from.Methods {
		methods[m] = conv.serve != nil
	}
	topics := map[string]bool{}
	for t, conv := range from.Topics {
		topics[t] = conv.fork != nil
	}
	return model.CheckConversions(&from.Contract.model, &c.model, methods, topics)
}

// compatibleLink is one step of a contract's chain of compatible
// versions: the earlier version, the later one it converts to and from
// (the contract itself, or the link before), and the conversions.
type compatibleLink struct {
	from  *Compatible
	later *Contract
}

// compatibleChain returns the links of c's chain of compatible versions,
// nearest first, at most [MaxCompatibleVersions].
func (c *Contract) compatibleChain() []compatibleLink {
	var chain []compatibleLink
	for later := c; later.derivesFrom != nil && len(chain) < MaxCompatibleVersions; later = later.derivesFrom.Contract {
		chain = append(chain, compatibleLink{from: later.derivesFrom, later: later})
	}
	return chain
}

// Compatible returns the earlier versions c speaks besides itself, nearest
// first: the chain of versions it derives from through changes compatible
// both ways (see [NewCompatibleContract]), at most [MaxCompatibleVersions].
// It is empty for a contract built with [NewContract].
func (c *Contract) Compatible() []*Contract {
	var out []*Contract
	for _, link := range c.compatibleChain() {
		out = append(out, link.from.Contract)
	}
	return out
}

// compatibleVersions returns, for a client of c, each earlier version of
// its chain with the client-side conversions of its methods and topics
// from and to c's own types: the conversions of each link composed with
// those of the links before it.
func (c *Contract) compatibleVersions() []*peerVersion {
	var out []*peerVersion
	var prev *peerVersion // its conversions are from and to c's types
	for _, link := range c.compatibleChain() {
		v := &peerVersion{contract: link.from.Contract, conversions: map[string]MethodConversion{}, topics: map[string]TopicConversion{}}
		for m, conv := range link.from.Methods {
			switch outer, ok := prev.methodConversion(m); {
			case prev == nil:
				v.conversions[m] = conv.client
			case ok:
				v.conversions[m] = composeMethod(outer, conv.client)
			}
		}
		for t, conv := range link.from.Topics {
			switch outer, ok := prev.topicConversionOf(t); {
			case prev == nil:
				v.topics[t] = conv.client
			case ok:
				v.topics[t] = composeTopic(outer, conv.client)
			}
		}
		out = append(out, v)
		prev = v
	}
	return out
}

// methodConversion returns v's conversion of method, if v is not nil and
// has one.
func (v *peerVersion) methodConversion(method string) (MethodConversion, bool) {
	if v == nil {
		return MethodConversion{}, false
	}
	conv, ok := v.conversions[method]
	return conv, ok
}

// topicConversionOf returns v's conversion of topic, if v is not nil and
// has one.
func (v *peerVersion) topicConversionOf(topic string) (TopicConversion, bool) {
	if v == nil {
		return TopicConversion{}, false
	}
	conv, ok := v.topics[topic]
	return conv, ok
}

// composeTopic converts an object up through inner, then outer.
func composeTopic(outer, inner TopicConversion) TopicConversion {
	return TopicConversion{up: func(raw []byte) ([]byte, error) {
		mid, err := inner.up(raw)
		if err != nil {
			return nil, err
		}
		return outer.up(mid)
	}}
}

// composeMethod converts through outer, then inner: requests down through
// both, answers up through inner first.
func composeMethod(outer, inner MethodConversion) MethodConversion {
	return MethodConversion{
		down: func(v any) (any, error) {
			mid, err := outer.down(v)
			if err != nil {
				return nil, err
			}
			return inner.down(mid)
		},
		newOldResp: inner.newOldResp,
		up: func(v any) (any, error) {
			mid, err := inner.up(v)
			if err != nil {
				return nil, err
			}
			return outer.up(mid)
		},
	}
}

// ServeCompatible makes s serve, besides c, every earlier version of c's
// chain of compatible versions ([Contract.Compatible]): each method of an
// earlier version is converted up, handled once by the handler registered
// for c, and its answer converted back down. Call it after registering
// c's handlers; it does nothing for a contract with no compatible versions.
// Topics follow on their own: [ServeTopic] serves the earlier forms of a
// topic of c. It panics on setup mistakes, like [HandleUnary]: a method of
// an earlier version already registered by hand, say.
//
// For generated code: the Register function lockstep-gen emits for a
// version compatible with the one it derives from calls it.
func ServeCompatible(s *Server, c *Contract) {
	for _, link := range c.compatibleChain() {
		for _, m := range sortedKeys(link.from.Methods) {
			link.from.Methods[m].serve(s, link.from.Contract, link.later, m)
		}
	}
}

// serveCompatibleTopic makes s serve the earlier forms of topic, written
// through w, for every earlier version of c's chain that declares it: each
// form is converted from the one before it, once per change.
func serveCompatibleTopic[T any](s *Server, c *Contract, topic string, w *TopicWriter[T], opts []TopicOption) {
	var later any = w
	for _, link := range c.compatibleChain() {
		conv, ok := link.from.Topics[topic]
		if !ok {
			return // the earlier versions do not declare it either
		}
		later = conv.fork(s, link.from.Contract, later, opts)
	}
}

// offersCompatible adds c's compatible versions to a client's versions and
// offers.
func (cl *Client) offersCompatible(c *Contract) {
	for _, v := range c.compatibleVersions() {
		cl.versions[v.contract.Version()] = v
		cl.offers = append(cl.offers, v.contract.Offer())
	}
}
