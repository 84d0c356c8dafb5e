package escapehatch

import (
	"net/netip"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	e := roundtrip.Check[Escapes](t, Contract, "Escapes", `{"addr": "10.0.0.1", "prefixes": ["10.0.0.0/8", "fd00::/8"], "pod": {"spec": {"containers": []}}, "count": 2, "raw": [null]}`)
	if *e.Addr != netip.MustParseAddr("10.0.0.1") || len(e.Prefixes) != 2 || *e.Total != 2 {
		t.Errorf("decoded %+v", e)
	}
	roundtrip.Check[Escapes](t, Contract, "Escapes", `{"pod": {}, "raw": null}`)
}
