package handshake_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/hashicorp/go-version"

	"github.com/lockstep-dev/lockstep/handshake"
)

// fuzzServer is the fixed server FuzzHelloNegotiate negotiates against: two
// offers, and a constraint on the client's release.
func fuzzServer() handshake.Server {
	s := nodecontroller(offer("2.0.0", "v2"), offer("1.0.0", "v1"))
	s.PeerRelease = ">= 1.30"
	return s
}

// offerVersionsEqual is the version equality offers are matched by, written
// out independently: equal segments (missing ones are zero), equal
// pre-release, build metadata ignored.
func offerVersionsEqual(a, b string) bool {
	va, errA := version.NewVersion(a)
	vb, errB := version.NewVersion(b)
	return errA == nil && errB == nil && va.Prerelease() == vb.Prerelease() && va.Equal(vb)
}

func FuzzHelloNegotiate(f *testing.F) {
	seeds := []handshake.Hello{
		kubelet(offer("2.0.0", "v2")),
		kubelet(offer("1.0.0", "v1")),
		kubelet(offer("3.0.0", "v3"), offer("2.0.0", "v2")),
		kubelet(offer("2.0.0", "v2 changed"), offer("1.0.0", "v1")),
		kubelet(offer("2.0", "v2 changed")),
		kubelet(offer("v2.0.0+b", "v2"), offer("2.0.0-rc.1", "v2")),
		kubelet(offer("0.9.0", "v0")),
	}
	for _, h := range seeds {
		data, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	old := kubelet(offer("2.0.0", "v2"))
	old.Release = "1.29.0"
	scheduler := kubelet(offer("2.0.0", "v2"))
	scheduler.Component = "scheduler"
	for _, h := range []handshake.Hello{old, scheduler} {
		data, _ := json.Marshal(h)
		f.Add(data)
	}
	f.Add([]byte(`{"contract":"nodestatus","component":"kubelet","instance":"i","offers":[]}`))
	f.Add([]byte(`not json`))

	server := fuzzServer()
	constraint, err := version.NewConstraint(server.PeerRelease)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h handshake.Hello
		if err := json.Unmarshal(data, &h); err != nil {
			return
		}
		if err := h.Validate(); err != nil {
			if err.Error() == "" {
				t.Error("Validate returned an empty error")
			}
			return
		}
		agreement, refusal := handshake.Negotiate(server, h)

		// What the oracle expects, from the rules written out plainly.
		common, equalFingerprints := false, false
		for _, so := range server.Offers {
			for _, co := range h.Offers {
				if offerVersionsEqual(so.Version, co.Version) {
					common = true
					if so.Fingerprint == co.Fingerprint {
						equalFingerprints = true
					}
				}
			}
		}
		release, releaseErr := version.NewVersion(h.Release)
		releaseOK := releaseErr == nil && constraint.Check(release)

		if refusal == nil {
			if h.Component != server.Client || !releaseOK {
				t.Fatalf("agreed %+v with a hello that should be refused: %+v", agreement, h)
			}
			checkAgreement(t, server.Offers, h.Offers, agreement)
			return
		}
		if agreement != (handshake.Agreement{}) {
			t.Errorf("refusal %v came with agreement %+v", refusal, agreement)
		}
		if refusal.Message == "" || refusal.Error() == "" {
			t.Errorf("refusal without a message: %+v", refusal)
		}
		wantReason, wantCode := handshake.ReasonVersionMismatch, handshake.CodeIncompatiblePeer
		switch {
		case h.Component != server.Client:
			wantReason, wantCode = handshake.ReasonRoleMismatch, handshake.CodePermissionDenied
		case !releaseOK:
			wantReason = handshake.ReasonReleaseConstraint
		case equalFingerprints:
			t.Fatalf("refused %v although a common version has equal fingerprints", refusal)
		case common:
			wantReason = handshake.ReasonFingerprintMismatch
		}
		if refusal.Reason != wantReason || refusal.Code != wantCode {
			t.Errorf("refusal %s/%s, want %s/%s: %v", refusal.Code, refusal.Reason, wantCode, wantReason, refusal)
		}
		if refusal.Contract != server.Contract || refusal.Server.Component != server.Component || refusal.Client.Component != h.Component {
			t.Errorf("refusal names the wrong sides: %+v", refusal)
		}
	})
}

// checkAgreement asserts that agreement is in both offer lists with equal
// fingerprints, and that no higher such version exists.
func checkAgreement(t *testing.T, server, client []handshake.Offer, agreement handshake.Agreement) {
	t.Helper()
	inServer, inClient := false, false
	for _, so := range server {
		if so.Version == agreement.Version && so.Fingerprint == agreement.Fingerprint {
			inServer = true
		}
	}
	for _, co := range client {
		if offerVersionsEqual(co.Version, agreement.Version) && co.Fingerprint == agreement.Fingerprint {
			inClient = true
		}
	}
	if !inServer || !inClient {
		t.Fatalf("agreement %+v is not in both offers (server %v, client %v)", agreement, server, client)
	}
	agreed := version.Must(version.NewVersion(agreement.Version))
	for _, so := range server {
		sv, err := version.NewVersion(so.Version)
		if err != nil || !sv.GreaterThan(agreed) {
			continue
		}
		for _, co := range client {
			if offerVersionsEqual(so.Version, co.Version) && so.Fingerprint == co.Fingerprint {
				t.Fatalf("agreed %s although %s is common with equal fingerprints", agreement.Version, so.Version)
			}
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, path := range []string{"bench.json", "nodestatus-v2.json", "extender-draft4.json"} {
		c := loadContract(f, filepath.Join(goldenDir, path))
		for _, name := range sortedSchemaNames(c) {
			f.Add([]byte(c.Schemas[name]))
		}
	}
	for _, s := range []string{
		`true`, `false`, `{}`, `42`, `null`, `"x"`, `[]`, ``, `{`,
		`{"title":"t","properties":{"description":{"description":"d"}}}`,
		`{"items":[{"title":1},{"items":{"$comment":"c"}}]}`,
		`{"dependencies":{"a":["b"],"c":{"examples":[]}}}`,
		`{"enum":[{"title":"kept"}],"const":{"description":"kept"},"default":{"$comment":"kept"}}`,
		`{"maximum":1E400}`, `{"a":1,"a":2}`, `{"minimum":-0.0,"multipleOf":1e-7,"maximum":100000000000000000000000}`,
		`{"const":"\u00e9\ud83d\ude00\u2028\/"}`, "{\"pattern\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		c := &handshake.Contract{Name: "fuzz", Version: "1.0.0", Server: "a", Client: "b",
			Methods: map[string]handshake.Method{"M": {Request: "S", Response: "S"}},
			Schemas: map[string]json.RawMessage{"S": schema}}
		canonical, err := handshake.Canonical(c)
		if err != nil {
			if err.Error() == "" {
				t.Error("empty error")
			}
			return
		}
		if !json.Valid(schema) {
			t.Fatalf("Canonical accepted invalid JSON %q", schema)
		}
		if !json.Valid(canonical) {
			t.Fatalf("Canonical produced invalid JSON %q", canonical)
		}
		again, err := jcs.Transform(canonical)
		if err != nil || !bytes.Equal(again, canonical) {
			t.Fatalf("the canonical form is not RFC 8785 canonical: %v\n%s\n%s", err, canonical, again)
		}
		var doc struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		}
		if err := json.Unmarshal(canonical, &doc); err != nil {
			t.Fatal(err)
		}
		c.Schemas["S"] = doc.Schemas["S"]
		fixed, err := handshake.Canonical(c)
		if err != nil {
			t.Fatalf("the canonical schema %s does not canonicalise again: %v", doc.Schemas["S"], err)
		}
		if !bytes.Equal(fixed, canonical) {
			t.Fatalf("not a fixed point:\n%s\n%s", canonical, fixed)
		}
	})
}

func sortedSchemaNames(c *handshake.Contract) []string {
	names := make([]string, 0, len(c.Schemas))
	for name := range c.Schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestFuzzCorpusPresent keeps the committed seed corpora from going missing
// unnoticed: go test runs them as part of the fuzz targets.
func TestFuzzCorpusPresent(t *testing.T) {
	for _, target := range []string{"FuzzHelloNegotiate", "FuzzCanonical"} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
		if err != nil || len(entries) == 0 {
			t.Errorf("no seed corpus for %s: %v", target, err)
		}
	}
}
