package handshake_test

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/handshake"
)

// TestSelectorsInTheFingerprint: a topic's selectors are a set (their order
// does not change the fingerprint), they change it when present, and an
// empty list hashes as no list, so contracts from before selectors keep
// their fingerprints.
func TestSelectorsInTheFingerprint(t *testing.T) {
	with := func(sel []string) string {
		t.Helper()
		c := &handshake.Contract{Name: "a", Version: "1.0.0", Server: "s", Client: "c",
			Topics: map[string]handshake.Topic{"T": {Object: "O", Key: "uid", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete, Selectors: sel}},
		}
		fp, err := handshake.Fingerprint(c)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	none, empty := with(nil), with([]string{})
	if none != empty {
		t.Errorf("an empty selector list changes the fingerprint: %s vs %s", none, empty)
	}
	ab, ba := with([]string{"nodeName", "Zone"}), with([]string{"Zone", "nodeName"})
	if ab != ba {
		t.Errorf("selector order changes the fingerprint: %s vs %s", ab, ba)
	}
	if ab == none || with([]string{"nodeName"}) == ab {
		t.Error("selectors do not change the fingerprint")
	}
	c := &handshake.Contract{Name: "a", Version: "1.0.0", Server: "s", Client: "c",
		Topics: map[string]handshake.Topic{"T": {Object: "O", Key: "uid", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete, Selectors: []string{"b", "\U0001F600", "\uFF5E"}}}}
	canonical, err := handshake.Canonical(c)
	if err != nil {
		t.Fatal(err)
	}
	// UTF-16 order: U+1F600 is a surrogate pair (D83D DE00), before U+FF5E.
	if want := `"selectors":["b","` + "\U0001F600" + `","` + "\uFF5E" + `"]`; !strings.Contains(string(canonical), want) {
		t.Errorf("canonical form %s does not hold %s", canonical, want)
	}
}
