package golden_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/maps"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/nodestatus"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/oneoftagged"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/oneofuntagged"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/presence"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/tuples"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// TestGeneratedEncoders checks the generated AppendJSON against
// json.Marshal on Go values that no decoded instance produces: the corners
// where encoding/json escapes, formats, omits or fails. The golden and
// real-world round trips compare them on every decoded instance.
func TestGeneratedEncoders(t *testing.T) {
	tricky := "a<b>&c\u2028\u2029\x01\b\f\n\r\t\"\\ \xff\xfe é 😀"
	zeroTime := time.Time{}
	when := time.Date(2026, 12, 1, 13, 4, 5, 600, time.FixedZone("x", 3600))
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	var nilMaps *maps.Maps
	cases := []struct {
		name    string
		v       jsonwire.Appender
		wantErr bool
	}{
		{name: "nil root", v: nilMaps},
		{name: "empty struct", v: &maps.Maps{}},
		{name: "escapes in values and map keys", v: &maps.Maps{
			Labels:         map[string]string{tricky: tricky, "b": "", "a": "<"},
			Nested:         map[string]map[string]float64{"x": {"tiny": 1e-7, "huge": 1e21, "neg": -0.000001, "z": 0, "mid": 123456.789}},
			NullableValues: map[string]*string{"nil": nil, "set": &tricky},
			Anything:       map[string]json.RawMessage{"spaced": json.RawMessage(` { "a" : [1, 2] , "h":"<&>" } `), "nil": nil, "plain": json.RawMessage(`[1,"x"]`)},
			Named:          maps.Labels{},
			Counts:         map[string]int64{"min": math.MinInt64, "max": math.MaxInt64},
		}},
		{name: "invalid raw JSON", v: &maps.Maps{Anything: map[string]json.RawMessage{"bad": json.RawMessage(`{`)}}, wantErr: true},
		{name: "empty raw JSON", v: &maps.Maps{Anything: map[string]json.RawMessage{"bad": {}}}, wantErr: true},
		{name: "NaN", v: &maps.Maps{Nested: map[string]map[string]float64{"x": {"nan": math.NaN()}}}, wantErr: true},
		{name: "infinity", v: &maps.Maps{Nested: map[string]map[string]float64{"x": {"inf": math.Inf(-1)}}}, wantErr: true},
		{name: "zero time through a pointer is omitted", v: &nodestatus.NodeCondition{Type: "Ready", Status: "True", LastHeartbeatTime: &zeroTime}},
		{name: "time with a zone and nanoseconds", v: &nodestatus.NodeCondition{Type: "Ready", Status: "True", Reason: &tricky, LastHeartbeatTime: &when}},
		{name: "year 10000", v: &nodestatus.NodeCondition{LastHeartbeatTime: &late}, wantErr: true},
		{name: "nil required members are null", v: &presence.Presence{}},
		{name: "presence: null and zero kept apart", v: &presence.Presence{
			OptNullString: jsonwire.Null[string](), OptNullInt: jsonwire.Value[int64](0), OptList: []string{}, OptRaw: json.RawMessage("null"),
		}},
		{name: "tuple with trailing absent elements", v: &tuples.Tuples{Legacy: &tuples.Legacy{Item0: &tricky}, Point: &tuples.TuplesPoint{Item0: 1.5, Item1: -2}}},
		{name: "tuple with rest", v: &tuples.Tuples{Headed: &tuples.TuplesHeaded{Item0: "h", Rest: []bool{true, false}}}},
		{name: "tuple with a hole", v: &tuples.Legacy{Item1: &tuples.LegacyItem1{}}, wantErr: true},
		{name: "tuple with a null element", v: &tuples.TuplesPoint{Item2: jsonwire.Null[string]()}},
		{name: "tagged union with extras", v: &oneoftagged.Event{NodeAdded: &oneoftagged.EventNodeAdded{
			Type: "NodeAdded", At: when, Node: tricky,
			AdditionalProperties: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a<": json.RawMessage(`"&"`)},
		}}},
		{name: "tagged union without a variant", v: &oneoftagged.Event{}, wantErr: true},
		{name: "tagged union with two variants", v: &oneoftagged.Event{NodeAdded: &oneoftagged.EventNodeAdded{}, PodsMoved: &oneoftagged.EventPodsMoved{}}, wantErr: true},
		{name: "undeclared member named like a declared one", v: &oneoftagged.EventNodeAdded{
			AdditionalProperties: map[string]json.RawMessage{"node": json.RawMessage(`1`)},
		}, wantErr: true},
		{name: "untagged union holding spaced JSON", v: func() *oneofuntagged.Holder {
			var h oneofuntagged.Holder
			h.Port = new(oneofuntagged.HolderPort)
			if err := json.Unmarshal([]byte(` 8080 `), h.Port); err != nil {
				t.Fatal(err)
			}
			h.Maybe = jsonwire.Null[oneofuntagged.ByName]()
			return &h
		}()},
		{name: "untagged union holding nothing", v: &oneofuntagged.Holder{Port: &oneofuntagged.HolderPort{}}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := difftest.EncodersAgree(c.v); err != nil {
				t.Fatal(err)
			}
			_, err := c.v.AppendJSON(nil)
			if (err != nil) != c.wantErr {
				t.Fatalf("AppendJSON error %v, want an error: %v", err, c.wantErr)
			}
			if err == nil {
				// Appending to a buffer that already holds something
				// keeps it, whatever the value starts with.
				got, _ := c.v.AppendJSON([]byte("prefix"))
				want, _ := json.Marshal(c.v)
				if !strings.HasPrefix(string(got), "prefix") || string(got[len("prefix"):]) != string(want) {
					t.Fatalf("appended to a prefix: %s", got)
				}
			}
		})
	}
}
