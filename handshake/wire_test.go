package handshake_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// TestHelloJSON decodes a hello in the shape the protocol documents.
func TestHelloJSON(t *testing.T) {
	t.Parallel()
	body := `{"contract":"nodestatus","component":"kubelet","instance":"7f3a","release":"1.31.2",
	 "offers":[{"version":"2.0.0","fingerprint":"` + fp("v2") + `"}],
	 "peerRelease":">= 1.31, < 1.32"}`
	var h handshake.Hello
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	want := handshake.Hello{Contract: "nodestatus", Component: "kubelet", Instance: "7f3a", Release: "1.31.2",
		Offers: offers(offer("2.0.0", "v2")), PeerRelease: ">= 1.31, < 1.32"}
	if h.Contract != want.Contract || h.Component != want.Component || h.Instance != want.Instance ||
		h.Release != want.Release || h.PeerRelease != want.PeerRelease || len(h.Offers) != 1 || h.Offers[0] != want.Offers[0] {
		t.Errorf("decoded %+v, want %+v", h, want)
	}
	if err := h.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	h.PeerRelease = ""
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "peerRelease") {
		t.Errorf("an empty peerRelease is sent: %s", out)
	}
}

// TestWelcomeJSON pins the welcome's wire form, durations as Go strings.
func TestWelcomeJSON(t *testing.T) {
	t.Parallel()
	w := handshake.Welcome{
		Session: "tok", Version: "2.0.0", Fingerprint: fp("v2"),
		Peer:      handshake.Peer{Component: "nodecontroller", Instance: "9c1d", Release: "1.31.2"},
		Heartbeat: handshake.Duration(time.Second), TTL: handshake.Duration(5 * time.Second),
	}
	out, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"session":"tok","version":"2.0.0","fingerprint":"` + fp("v2") +
		`","peer":{"component":"nodecontroller","instance":"9c1d","release":"1.31.2"},"heartbeat":"1s","ttl":"5s"}`
	if string(out) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", out, want)
	}
	var back handshake.Welcome
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back != w {
		t.Errorf("round trip = %+v, want %+v", back, w)
	}
}

// TestRefusalJSON pins the member names a refusal travels with.
func TestRefusalJSON(t *testing.T) {
	t.Parallel()
	_, refusal := handshake.Negotiate(nodecontroller(offer("1.0.0", "v1")), kubelet(offer("2.0.0", "v2")))
	out, err := json.Marshal(refusal)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":"incompatible_peer","reason":"version_mismatch","contract":"nodestatus",` +
		`"server":{"component":"nodecontroller","release":"1.31.2","offers":[{"version":"1.0.0","fingerprint":"` + fp("v1") + `"}]},` +
		`"client":{"component":"kubelet","release":"1.31.2","offers":[{"version":"2.0.0","fingerprint":"` + fp("v2") + `"}]},` +
		`"message":"nodecontroller speaks nodestatus 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode"}`
	if string(out) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", out, want)
	}
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json    string        // the encoded duration
		want    time.Duration // the decoded value
		wantErr string        // a substring of the error; "" when valid
	}{
		{`"1s"`, time.Second, ""},
		{`"1.5s"`, 1500 * time.Millisecond, ""},
		{`"250ms"`, 250 * time.Millisecond, ""},
		{`"0s"`, 0, ""},
		{`"-1s"`, 0, "negative"},
		{`"soon"`, 0, "invalid duration"},
		{`1000000000`, 0, `a string such as "1s"`},
		{`null`, 0, ""},
		{`""`, 0, "invalid duration"},
	}
	for _, tt := range tests {
		var d handshake.Duration
		err := json.Unmarshal([]byte(tt.json), &d)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one mentioning %q", tt.json, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.json, err)
			continue
		}
		if time.Duration(d) != tt.want {
			t.Errorf("%s: decoded %v, want %v", tt.json, time.Duration(d), tt.want)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var again handshake.Duration
		if err := json.Unmarshal(out, &again); err != nil || again != d {
			t.Errorf("%s: re-encoded as %s, which decodes to %v, %v", tt.json, out, time.Duration(again), err)
		}
	}
}
