package oneofandanyof

import (
	"encoding/json"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/difftest"
	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestDifferential(t *testing.T) {
	t.Parallel()
	difftest.Run(t, Contract, difftest.Options{Seed: 1},
		difftest.For[Msg]("Msg", `{}`, `{"v": 3}`, `{"v": "ab"}`, `{"both": 9}`, `{"both": "abc", "v": 0}`))
}

func TestRoundTrip(t *testing.T) {
	v := roundtrip.Check[Msg](t, Contract, "Msg", `{"v": "ab", "both": 4}`)
	if string(v.V) != `"ab"` || string(v.Both) != `4` {
		t.Errorf("raw members: %s %s", v.V, v.Both)
	}
	for _, in := range []string{`{"v": -1}`, `{"v": "a"}`, `{"v": true}`, `{"both": 10}`, `{"both": "abcd"}`} {
		var m Msg
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if err := Contract.ValidateJSON("Msg", []byte(in)); err == nil {
			t.Errorf("%s: valid", in)
		}
	}
}
