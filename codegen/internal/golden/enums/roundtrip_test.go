package enums

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"phase": "Pending"}`,
		`{"phase": "Failed", "priority": -1, "maybe": null, "odd": "", "shared": "red", "more": ["green", "blue"]}`,
		`{"phase": "Running", "priority": 10, "maybe": "on", "odd": "Already Spaced"}`,
	} {
		roundtrip.Check[Enums](t, Contract, "Enums", in)
	}
	e := roundtrip.Check[Enums](t, Contract, "Enums", `{"phase": "Succeeded", "maybe": null, "odd": "a-b"}`)
	if e.Phase != EnumsPhaseSucceeded || !e.Maybe.IsNull() || *e.Odd != EnumsOddAB {
		t.Errorf("decoded %+v", e)
	}
	roundtrip.Encode(t, Enums{Phase: EnumsPhaseRunning, Priority: ptr(EnumsPriorityValue10), Shared: ptr(ColorBlue)},
		`{"phase": "Running", "priority": 10, "shared": "blue"}`)
}

func ptr[T any](v T) *T { return &v }
