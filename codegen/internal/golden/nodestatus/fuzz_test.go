package nodestatus

import (
	"os"
	"regexp"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
)

// hugeNumber matches numbers jsonschema/v5 would spend minutes turning into
// exact fractions (an exponent of five digits or more, or a thousand
// digits); such inputs say nothing about the generated code.
var hugeNumber = regexp.MustCompile(`[eE][+-]?0*[0-9]{5,}|[0-9]{1000,}`)

// FuzzDecodeValidate feeds arbitrary bytes to the generated decoder and
// Validate of each message of the package and to jsonschema/v5, and fails
// when their verdicts differ (beyond values the Go types cannot hold). Its
// seed corpus, the differential corpus of a few seeds, runs with go test.
func FuzzDecodeValidate(f *testing.F) {
	bench, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		f.Fatal(err)
	}
	messages := []difftest.Message{
		difftest.For[NodeStatus]("NodeStatus", k8sStatus),
		difftest.For[BenchNodeStatus]("BenchNodeStatus", string(bench)),
		difftest.For[PodStatus]("PodStatus", `{"uid": "u", "phase": "Running", "podIP": null, "startTime": "2026-11-30T05:00:00Z"}`),
		difftest.For[Ack]("Ack", `{"accepted": true, "generation": 3}`),
	}
	schemas := Contract.Model().Schemas
	for i, m := range messages {
		corpus, err := difftest.Corpus(schemas[m.Name], m.Seeds, 7, 4, 4)
		if err != nil {
			f.Fatal(err)
		}
		for _, inst := range corpus {
			f.Add(uint8(i), inst)
		}
	}
	f.Add(uint8(3), []byte(`{"accepted": true, "generation": 1.0}`))
	f.Add(uint8(3), []byte(`{"accepted": true, "generation": 1e2, "generation": -1}`))
	f.Add(uint8(3), []byte(`{"accepted": true, "generation": 3} }`))
	f.Add(uint8(2), []byte(`{"uid": "u", "phase": "Running", "startTime": "1990-12-31T23:59:60Z"}`))
	f.Add(uint8(2), []byte(`{"uid": "\u00e9\ud800", "phase": "Running", "podIP": "\xff"}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		if hugeNumber.Match(data) {
			return
		}
		m := messages[int(which)%len(messages)]
		if v := difftest.Compare(Contract, m, data, false); !v.Agree() {
			t.Fatalf("%s: generated %v, jsonschema/v5 %v\n%q", m.Name, v.Generated, v.Reference, data)
		}
	})
}
