package suite

import (
	"encoding/json"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework/benchkit/benchgen"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// corpusCase is one document of the differential corpus.
type corpusCase struct {
	name string
	raw  []byte
}

// validationCorpus is the benchmark instance and mutations of it, each
// breaking one rule of the schema (or none, for the valid ones): both
// validators must give every document the same verdict.
func validationCorpus() []corpusCase {
	base := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(benchmsg.InstanceJSON(), &m); err != nil {
			panic(err)
		}
		return m
	}
	enc := func(m any) []byte {
		raw, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return raw
	}
	var cases []corpusCase
	add := func(name string, mutate func(m map[string]any)) {
		m := base()
		mutate(m)
		cases = append(cases, corpusCase{name, enc(m)})
	}
	for i := range 8 {
		node := benchmsg.Node(i)
		cases = append(cases, corpusCase{fmt.Sprintf("valid node %d", i), enc(node)})
	}
	for _, field := range []string{"nodeName", "conditions", "capacity", "allocatable", "addresses", "nodeInfo", "images"} {
		add("missing "+field, func(m map[string]any) { delete(m, field) })
	}
	cond := func(m map[string]any) map[string]any { return m["conditions"].([]any)[0].(map[string]any) }
	add("nodeName a number", func(m map[string]any) { m["nodeName"] = 5 })
	add("nodeName empty", func(m map[string]any) { m["nodeName"] = "" })
	add("nodeName breaks the pattern", func(m map[string]any) { m["nodeName"] = "Node_A" })
	add("nodeName too long", func(m map[string]any) { m["nodeName"] = strings.Repeat("a", 254) })
	add("an unknown property", func(m map[string]any) { m["extra"] = true })
	add("condition type outside the enum", func(m map[string]any) { cond(m)["type"] = "Sleepy" })
	add("condition status outside the enum", func(m map[string]any) { cond(m)["status"] = "Maybe" })
	add("condition without status", func(m map[string]any) { delete(cond(m), "status") })
	add("condition with an unknown property", func(m map[string]any) { cond(m)["x"] = 1 })
	add("condition without the optional reason", func(m map[string]any) { delete(cond(m), "reason") })
	add("heartbeat time a number", func(m map[string]any) { cond(m)["lastHeartbeatTime"] = 17 })
	add("too many conditions", func(m map[string]any) {
		cs := m["conditions"].([]any)
		for len(cs) <= 32 {
			cs = append(cs, cs[0])
		}
		m["conditions"] = cs
	})
	add("no conditions", func(m map[string]any) { m["conditions"] = []any{} })
	add("capacity value a number", func(m map[string]any) { m["capacity"].(map[string]any)["cpu"] = 16 })
	add("addresses an object", func(m map[string]any) { m["addresses"] = map[string]any{} })
	add("address without type", func(m map[string]any) {
		delete(m["addresses"].([]any)[0].(map[string]any), "type")
	})
	add("nodeInfo with an unknown property", func(m map[string]any) { m["nodeInfo"].(map[string]any)["x"] = "y" })
	add("nodeInfo a string", func(m map[string]any) { m["nodeInfo"] = "linux" })
	add("an empty image name", func(m map[string]any) { m["images"] = []any{""} })
	add("images null", func(m map[string]any) { m["images"] = nil })
	raw := benchmsg.InstanceJSON()
	cases = append(cases,
		corpusCase{"truncated", raw[:len(raw)/2]},
		corpusCase{"not JSON", []byte("nodeName: x")},
		corpusCase{"an array", []byte("[]")},
		corpusCase{"trailing data", append(append([]byte{}, raw...), []byte(" {}")...)},
	)
	return cases
}

func generatedVerdict(raw []byte) error {
	var n benchgen.NodeStatus
	if err := n.UnmarshalJSON(raw); err != nil {
		return err
	}
	return n.Validate()
}

func schemaVerdict(raw []byte) error {
	return benchgen.Contract.ValidateJSON("NodeStatus", raw)
}

// Validation measures P8: decoding and validating the benchmark NodeStatus
// with lockstep's generated decoder and Validate, against decoding it to
// any and validating that with jsonschema/v5 (what the runtime does for
// types without a generated validator), and compares both verdicts over a
// differential corpus.
func (s *Suite) Validation() error {
	corpus := validationCorpus()
	var mismatches []string
	for _, c := range corpus {
		g, a := generatedVerdict(c.raw), schemaVerdict(c.raw)
		if (g == nil) != (a == nil) {
			mismatches = append(mismatches, fmt.Sprintf("%s (generated: %v; jsonschema/v5: %v)", c.name, g, a))
		}
	}
	s.validationMismatches = mismatches
	doc := benchmsg.InstanceJSON()
	limit := pick(s, time.Second, 100*time.Millisecond)
	variants := []struct {
		name string
		fn   func([]byte) error
	}{{results.VGeneratedDecode, generatedVerdict}, {results.VSchemaDecode, schemaVerdict}}
	for range s.cfg.Rounds {
		for _, v := range variants {
			if err := s.round(results.WValidation, v.name, func() (results.Round, error) {
				n := 0
				start := time.Now()
				for time.Since(start) < limit && n < 10_000_000 {
					for range 64 {
						if err := v.fn(doc); err != nil {
							return results.Round{}, fmt.Errorf("the benchmark instance does not validate: %w", err)
						}
					}
					n += 64
				}
				return results.Round{Metrics: map[string]float64{
					results.MNsPerOp:    float64(time.Since(start).Nanoseconds()) / float64(n),
					results.MMismatches: float64(len(mismatches)),
					results.MCorpus:     float64(len(corpus)),
				}}, nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
