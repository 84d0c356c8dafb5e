package oneofuntagged

import (
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"port": 80, "target": {"name": "web"}, "choice": {"a": "x"}, "maybe": null, "exclusive": {"x": 1}, "removable": null, "mail": null}`,
		`{"port": "http", "target": {"selector": {"app": "web"}}, "choice": ["a", "b"], "maybe": {"name": "n"}, "exclusive": {"y": 2}, "removable": {"except": ["a"]}, "mail": {"enabled": true, "profile": "p"}}`,
		`{"removable": true, "mail": {"enabled": false, "profile": null}}`,
	} {
		roundtrip.Check[Holder](t, Contract, "Holder", in)
	}
	h := roundtrip.Check[Holder](t, Contract, "Holder", `{"port": "http", "target": {"selector": {"app": "web"}}, "maybe": null}`)
	if s, err := h.Port.AsString(); err != nil || s != "http" {
		t.Errorf("port as string: %q, %v", s, err)
	}
	if _, err := h.Port.AsInteger(); err == nil {
		t.Error("a string port decoded as an integer")
	}
	if sel, err := h.Target.AsBySelector(); err != nil || sel.Selector["app"] != "web" {
		t.Errorf("target: %+v, %v", sel, err)
	}
	if !h.Maybe.IsNull() {
		t.Errorf("maybe: %v", h.Maybe)
	}
	var p HolderPort
	if err := p.FromInteger(8080); err != nil {
		t.Fatal(err)
	}
	roundtrip.Encode(t, Holder{Port: &p}, `{"port": 8080}`)
}
