package handshake_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/handshake"
)

// fp makes a well-formed fingerprint from a label, so tables can name
// "version 2 as the server has it" and "version 2 as a changed client has
// it" without hashing contracts.
func fp(label string) string {
	sum := sha256.Sum256([]byte(label))
	return handshake.FingerprintPrefix + hex.EncodeToString(sum[:])
}

// offer is an offer of version v whose fingerprint is fp(label).
func offer(v, label string) handshake.Offer {
	return handshake.Offer{Version: v, Fingerprint: fp(label)}
}

// offers lists offers, for readable tables.
func offers(o ...handshake.Offer) []handshake.Offer { return o }

// nodecontroller is the server of the nodestatus contract, at release 1.31.2.
func nodecontroller(o ...handshake.Offer) handshake.Server {
	return handshake.Server{Contract: "nodestatus", Component: "nodecontroller", Client: "kubelet", Release: "1.31.2", Offers: o}
}

// kubelet is a hello of the nodestatus contract's client, at release 1.31.2.
func kubelet(o ...handshake.Offer) handshake.Hello {
	return handshake.Hello{Contract: "nodestatus", Component: "kubelet", Instance: "7f3a", Release: "1.31.2", Offers: o}
}

func TestNegotiate(t *testing.T) {
	t.Parallel()
	with := func(s handshake.Server, change func(*handshake.Server)) handshake.Server { change(&s); return s }
	hello := func(h handshake.Hello, change func(*handshake.Hello)) handshake.Hello { change(&h); return h }
	tests := []struct {
		name    string              // what the case shows
		server  handshake.Server    // the deciding side
		hello   handshake.Hello     // what the client sent
		want    handshake.Agreement // the agreement; zero when refused
		reason  handshake.Reason    // the refusal's reason; "" when agreed
		code    handshake.Code      // the refusal's code
		message string              // the refusal's exact message
	}{
		// Agreements.
		{
			name:   "lockstep: the one version both speak",
			server: nodecontroller(offer("1.0.0", "v1")),
			hello:  kubelet(offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		}, {
			name:   "server in fork mode meets an old client",
			server: nodecontroller(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			hello:  kubelet(offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		}, {
			name:   "client in fork mode meets an old server",
			server: nodecontroller(offer("1.0.0", "v1")),
			hello:  kubelet(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		}, {
			name:   "both in fork mode share one version",
			server: nodecontroller(offer("3.0.0", "v3"), offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "2.0.0", Fingerprint: fp("v2")},
		}, {
			name:   "highest common version wins, whatever the order",
			server: nodecontroller(offer("1.0.0", "v1"), offer("10.0.0", "v10"), offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2"), offer("1.0.0", "v1"), offer("10.0.0", "v10")),
			want:   handshake.Agreement{Version: "10.0.0", Fingerprint: fp("v10")},
		}, {
			name:   "versions compare numerically, not as strings",
			server: nodecontroller(offer("9.0.0", "v9"), offer("10.0.0", "v10")),
			hello:  kubelet(offer("9.0.0", "v9"), offer("10.0.0", "v10")),
			want:   handshake.Agreement{Version: "10.0.0", Fingerprint: fp("v10")},
		}, {
			name:   "a changed higher version falls back to the highest equal one",
			server: nodecontroller(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			hello:  kubelet(offer("2.0.0", "v2 changed"), offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		}, {
			name:   `"2.0" on the server is "2.0.0" on the client; the server's spelling is agreed`,
			server: nodecontroller(offer("2.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2")),
			want:   handshake.Agreement{Version: "2.0", Fingerprint: fp("v2")},
		}, {
			name:   `"2.0.0" on the server is "2.0" on the client`,
			server: nodecontroller(offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0", "v2")),
			want:   handshake.Agreement{Version: "2.0.0", Fingerprint: fp("v2")},
		}, {
			name:   "a v prefix and build metadata do not make another version",
			server: nodecontroller(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			hello:  kubelet(offer("v2.0.0+build.7", "v2")),
			want:   handshake.Agreement{Version: "2.0.0", Fingerprint: fp("v2")},
		}, {
			name:   "a release beats its pre-release",
			server: nodecontroller(offer("2.0.0-rc.1", "rc1"), offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2"), offer("2.0.0-rc.1", "rc1")),
			want:   handshake.Agreement{Version: "2.0.0", Fingerprint: fp("v2")},
		}, {
			name:   "pre-releases agree with themselves",
			server: nodecontroller(offer("2.0.0-rc.1", "rc1"), offer("1.0.0", "v1")),
			hello:  kubelet(offer("2.0.0-rc.1", "rc1")),
			want:   handshake.Agreement{Version: "2.0.0-rc.1", Fingerprint: fp("rc1")},
		}, {
			name:   "an unparseable client version is ignored by an unvalidated hello",
			server: nodecontroller(offer("1.0.0", "v1")),
			hello:  kubelet(offer("banana", "v1"), offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		}, {
			name:   "a satisfied release constraint",
			server: with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 1.31, < 1.32" }),
			hello:  kubelet(offer("1.0.0", "v1")),
			want:   handshake.Agreement{Version: "1.0.0", Fingerprint: fp("v1")},
		},

		// Version mismatches and their advice.
		{
			name:    "server older than client",
			server:  nodecontroller(offer("1.0.0", "v1")),
			hello:   kubelet(offer("2.0.0", "v2")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode",
		}, {
			name:    "client older than server",
			server:  nodecontroller(offer("2.0.0", "v2")),
			hello:   kubelet(offer("1.0.0", "v1")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 2.0.0; kubelet offers 1.0.0: upgrade kubelet or run nodecontroller with fork mode",
		}, {
			name:    "fork windows that do not overlap list every version, highest first",
			server:  nodecontroller(offer("3.0.0", "v3"), offer("4.0.0", "v4")),
			hello:   kubelet(offer("1.0.0", "v1"), offer("2.0.0", "v2")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 4.0.0 and 3.0.0; kubelet offers 2.0.0 and 1.0.0: upgrade kubelet or run nodecontroller with fork mode",
		}, {
			name:    "three versions",
			server:  nodecontroller(offer("1.0.0", "v1"), offer("3.0.0", "v3"), offer("2.0.0", "v2")),
			hello:   kubelet(offer("5.0.0", "v5")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 3.0.0, 2.0.0 and 1.0.0; kubelet offers 5.0.0: upgrade nodecontroller or run kubelet with fork mode",
		}, {
			name:    "interleaved versions: the side whose newest is older upgrades",
			server:  nodecontroller(offer("3.0.0", "v3"), offer("1.0.0", "v1")),
			hello:   kubelet(offer("2.0.0", "v2")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 3.0.0 and 1.0.0; kubelet offers 2.0.0: upgrade kubelet or run nodecontroller with fork mode",
		}, {
			name:    "a pre-release is not its release",
			server:  nodecontroller(offer("2.0.0", "v2")),
			hello:   kubelet(offer("2.0.0-rc.1", "v2")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 2.0.0; kubelet offers 2.0.0-rc.1: upgrade kubelet or run nodecontroller with fork mode",
		}, {
			name:    "a pre-release is not its release, however many segments",
			server:  nodecontroller(offer("2.0.0", "v2")),
			hello:   kubelet(offer("2.0.0.0-beta", "v2")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 2.0.0; kubelet offers 2.0.0.0-beta: upgrade one side so both speak the same nodestatus version, or run one with fork mode",
		}, {
			name:    "a client that offers nothing (an unvalidated hello)",
			server:  nodecontroller(offer("1.0.0", "v1")),
			hello:   kubelet(),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks nodestatus 1.0.0; kubelet offers none: upgrade one side so both speak the same nodestatus version, or run one with fork mode",
		}, {
			name:    "a server that speaks nothing",
			server:  nodecontroller(),
			hello:   kubelet(offer("1.0.0", "v1")),
			reason:  handshake.ReasonVersionMismatch,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller speaks no nodestatus version; kubelet offers 1.0.0: upgrade one side so both speak the same nodestatus version, or run one with fork mode",
		},

		// Fingerprint mismatches.
		{
			name:   "same version, different messages: both fingerprints are named",
			server: nodecontroller(offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2 changed")),
			reason: handshake.ReasonFingerprintMismatch,
			code:   handshake.CodeIncompatiblePeer,
			message: "nodecontroller and kubelet both speak nodestatus 2.0.0 but with different messages (server fingerprint " + fp("v2") +
				", client fingerprint " + fp("v2 changed") + "): one side changed the contract without bumping its version; " +
				"regenerate both from the same contract or bump the version",
		}, {
			name:   "several changed shared versions: the highest is named",
			server: nodecontroller(offer("1.0.0", "v1"), offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0.0", "v2 changed"), offer("1.0.0", "v1 changed"), offer("3.0.0", "v3")),
			reason: handshake.ReasonFingerprintMismatch,
			code:   handshake.CodeIncompatiblePeer,
			message: "nodecontroller and kubelet both speak nodestatus 2.0.0 but with different messages (server fingerprint " + fp("v2") +
				", client fingerprint " + fp("v2 changed") + "): one side changed the contract without bumping its version; " +
				"regenerate both from the same contract or bump the version",
		}, {
			name:   "a version spelled differently is named in both spellings",
			server: nodecontroller(offer("2.0.0", "v2")),
			hello:  kubelet(offer("2.0", "v2 spelled 2.0")),
			reason: handshake.ReasonFingerprintMismatch,
			code:   handshake.CodeIncompatiblePeer,
			message: "nodecontroller and kubelet both speak nodestatus 2.0.0 (kubelet spells it 2.0) but with different messages (server fingerprint " + fp("v2") +
				", client fingerprint " + fp("v2 spelled 2.0") + "): one side changed the contract without bumping its version; " +
				"regenerate both from the same contract or bump the version",
		},

		// Roles, releases, draining, and the order of the checks.
		{
			name:    "a component that is not the contract's client",
			server:  nodecontroller(offer("1.0.0", "v1")),
			hello:   hello(kubelet(offer("1.0.0", "v1")), func(h *handshake.Hello) { h.Component = "scheduler" }),
			reason:  handshake.ReasonRoleMismatch,
			code:    handshake.CodePermissionDenied,
			message: "scheduler is not a client of nodestatus: only kubelet may call nodecontroller",
		}, {
			name:    "the server itself is not its own client",
			server:  nodecontroller(offer("1.0.0", "v1")),
			hello:   hello(kubelet(offer("1.0.0", "v1")), func(h *handshake.Hello) { h.Component = "nodecontroller" }),
			reason:  handshake.ReasonRoleMismatch,
			code:    handshake.CodePermissionDenied,
			message: "nodecontroller is not a client of nodestatus: only kubelet may call nodecontroller",
		}, {
			name:    "a client release outside the server's constraint",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 1.32" }),
			hello:   kubelet(offer("1.0.0", "v1")),
			reason:  handshake.ReasonReleaseConstraint,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller requires kubelet release >= 1.32, but it runs 1.31.2: run a kubelet release that satisfies it",
		}, {
			name:    "a client that reports no release under a constraint",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 1.31" }),
			hello:   hello(kubelet(offer("1.0.0", "v1")), func(h *handshake.Hello) { h.Release = "" }),
			reason:  handshake.ReasonReleaseConstraint,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller requires kubelet release >= 1.31, but it reported no release: run a kubelet release that satisfies it",
		}, {
			name:    "a client release that is not a version (an unvalidated hello)",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 1.31" }),
			hello:   hello(kubelet(offer("1.0.0", "v1")), func(h *handshake.Hello) { h.Release = "banana" }),
			reason:  handshake.ReasonReleaseConstraint,
			code:    handshake.CodeIncompatiblePeer,
			message: `nodecontroller requires kubelet release >= 1.31, but its release "banana" is not a version: run a kubelet release that satisfies it`,
		}, {
			name:    "a server constraint that does not parse refuses everyone",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = "~> banana" }),
			hello:   kubelet(offer("1.0.0", "v1")),
			reason:  handshake.ReasonReleaseConstraint,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller requires kubelet release ~> banana, but the constraint does not parse (malformed constraint: ~> banana): run a kubelet release that satisfies it",
		}, {
			name:    "a draining server refuses even a perfect match",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.Draining = true }),
			hello:   kubelet(offer("1.0.0", "v1")),
			reason:  handshake.ReasonDraining,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller is draining and takes no new nodestatus sessions: retry against another endpoint or its replacement",
		}, {
			name: "draining is checked before the role",
			server: with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) {
				s.Draining = true
				s.PeerRelease = ">= 9"
			}),
			hello:   hello(kubelet(offer("2.0.0", "v2")), func(h *handshake.Hello) { h.Component = "scheduler" }),
			reason:  handshake.ReasonDraining,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller is draining and takes no new nodestatus sessions: retry against another endpoint or its replacement",
		}, {
			name:    "the role is checked before the release",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 9" }),
			hello:   hello(kubelet(offer("2.0.0", "v2")), func(h *handshake.Hello) { h.Component = "scheduler" }),
			reason:  handshake.ReasonRoleMismatch,
			code:    handshake.CodePermissionDenied,
			message: "scheduler is not a client of nodestatus: only kubelet may call nodecontroller",
		}, {
			name:    "the release is checked before the offers",
			server:  with(nodecontroller(offer("1.0.0", "v1")), func(s *handshake.Server) { s.PeerRelease = ">= 9" }),
			hello:   kubelet(offer("1.0.0", "v1 changed")),
			reason:  handshake.ReasonReleaseConstraint,
			code:    handshake.CodeIncompatiblePeer,
			message: "nodecontroller requires kubelet release >= 9, but it runs 1.31.2: run a kubelet release that satisfies it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, refusal := handshake.Negotiate(tt.server, tt.hello)
			if tt.reason == "" {
				if refusal != nil {
					t.Fatalf("refused: %v", refusal)
				}
				if got != tt.want {
					t.Errorf("agreement = %+v, want %+v", got, tt.want)
				}
				return
			}
			if refusal == nil {
				t.Fatalf("agreed %+v, want a %s refusal", got, tt.reason)
			}
			if got != (handshake.Agreement{}) {
				t.Errorf("a refusal came with agreement %+v", got)
			}
			want := &handshake.Refusal{
				Code: tt.code, Reason: tt.reason, Contract: "nodestatus", Message: tt.message,
				Server: handshake.SideInfo{Component: "nodecontroller", Release: tt.server.Release, Offers: tt.server.Offers},
				Client: handshake.SideInfo{Component: tt.hello.Component, Release: tt.hello.Release, Offers: tt.hello.Offers},
			}
			if !reflect.DeepEqual(refusal, want) {
				t.Errorf("refusal\n got %+v\nwant %+v", refusal, want)
			}
		})
	}
}

// TestNegotiateExample is the case the documentation quotes.
func TestNegotiateExample(t *testing.T) {
	t.Parallel()
	_, refusal := handshake.Negotiate(nodecontroller(offer("1.0.0", "v1")), kubelet(offer("2.0.0", "v2")))
	const want = "nodecontroller speaks nodestatus 1.0.0; kubelet offers 2.0.0: upgrade nodecontroller or run kubelet with fork mode"
	if refusal == nil || refusal.Message != want {
		t.Fatalf("refusal = %v, want message %q", refusal, want)
	}
	if got := refusal.Error(); got != "handshake refused (version_mismatch): "+want {
		t.Errorf("Error() = %q", got)
	}
}

// TestNegotiateIsSymmetricInOrder checks that the order in which either side
// lists its offers never changes the outcome.
func TestNegotiateIsSymmetricInOrder(t *testing.T) {
	t.Parallel()
	server := []handshake.Offer{offer("3.0.0", "v3"), offer("2.0.0", "v2"), offer("1.0.0", "v1"), offer("0.9.0", "v0.9")}
	client := []handshake.Offer{offer("3.0.0", "v3 changed"), offer("2.0.0", "v2"), offer("1.0.0", "v1"), offer("4.0.0", "v4")}
	want := handshake.Agreement{Version: "2.0.0", Fingerprint: fp("v2")}
	for _, s := range permutations(server) {
		for _, c := range permutations(client) {
			got, refusal := handshake.Negotiate(nodecontroller(s...), kubelet(c...))
			if refusal != nil || got != want {
				t.Fatalf("server %v, client %v: got %+v, %v; want %+v", s, c, got, refusal, want)
			}
		}
	}
}

// permutations returns every ordering of offers.
func permutations(list []handshake.Offer) [][]handshake.Offer {
	if len(list) <= 1 {
		return [][]handshake.Offer{append([]handshake.Offer(nil), list...)}
	}
	var out [][]handshake.Offer
	for i := range list {
		rest := append(append([]handshake.Offer(nil), list[:i]...), list[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]handshake.Offer{list[i]}, p...))
		}
	}
	return out
}

func TestCheckWelcome(t *testing.T) {
	t.Parallel()
	welcome := func(version, label, release string) handshake.Welcome {
		return handshake.Welcome{
			Session: "s", Version: version, Fingerprint: fp(label),
			Peer: handshake.Peer{Component: "nodecontroller", Instance: "9c1d", Release: release},
		}
	}
	tests := []struct {
		name        string            // what the case shows
		offers      []handshake.Offer // what the client offered
		peerRelease string            // the client's constraint on the server's release
		welcome     handshake.Welcome // the server's answer
		reason      handshake.Reason  // the refusal's reason; "" when accepted
		message     string            // the refusal's exact message
	}{
		{
			name:    "the offered version with its fingerprint",
			offers:  offers(offer("1.0.0", "v1")),
			welcome: welcome("1.0.0", "v1", "1.31.2"),
		}, {
			name:    "the lower version of a fork offer",
			offers:  offers(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			welcome: welcome("1.0.0", "v1", "1.31.2"),
		}, {
			name:    "the server's spelling of an offered version",
			offers:  offers(offer("2.0.0", "v2")),
			welcome: welcome("2.0", "v2", "1.31.2"),
		}, {
			name:        "a server release inside the constraint",
			offers:      offers(offer("1.0.0", "v1")),
			peerRelease: ">= 1.31, < 1.32",
			welcome:     welcome("1.0.0", "v1", "1.31.2"),
		}, {
			name:    "a version never offered",
			offers:  offers(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			welcome: welcome("3.0.0", "v3", "1.31.2"),
			reason:  handshake.ReasonVersionMismatch,
			message: "nodecontroller agreed nodestatus 3.0.0, which kubelet never offered: the server is misbehaving",
		}, {
			name:    "a pre-release of an offered version was never offered",
			offers:  offers(offer("2.0.0", "v2")),
			welcome: welcome("2.0.0-rc.1", "v2", "1.31.2"),
			reason:  handshake.ReasonVersionMismatch,
			message: "nodecontroller agreed nodestatus 2.0.0-rc.1, which kubelet never offered: the server is misbehaving",
		}, {
			name:    "an empty agreed version",
			offers:  offers(offer("1.0.0", "v1")),
			welcome: welcome("", "v1", "1.31.2"),
			reason:  handshake.ReasonVersionMismatch,
			message: "nodecontroller agreed nodestatus , which kubelet never offered: the server is misbehaving",
		}, {
			name:    "an offered version with another fingerprint",
			offers:  offers(offer("2.0.0", "v2"), offer("1.0.0", "v1")),
			welcome: welcome("2.0.0", "v2 changed", "1.31.2"),
			reason:  handshake.ReasonFingerprintMismatch,
			message: "nodecontroller agreed nodestatus 2.0.0 with fingerprint " + fp("v2 changed") + ", but kubelet has " + fp("v2") +
				": regenerate both from the same contract or bump the version",
		}, {
			name:        "a server release outside the constraint",
			offers:      offers(offer("1.0.0", "v1")),
			peerRelease: ">= 1.32",
			welcome:     welcome("1.0.0", "v1", "1.31.2"),
			reason:      handshake.ReasonReleaseConstraint,
			message:     "kubelet requires nodecontroller release >= 1.32, but it runs 1.31.2: run a nodecontroller release that satisfies it",
		}, {
			name:        "a server that reports no release under a constraint",
			offers:      offers(offer("1.0.0", "v1")),
			peerRelease: ">= 1.31",
			welcome:     welcome("1.0.0", "v1", ""),
			reason:      handshake.ReasonReleaseConstraint,
			message:     "kubelet requires nodecontroller release >= 1.31, but it reported no release: run a nodecontroller release that satisfies it",
		}, {
			name:        "the version is checked before the release",
			offers:      offers(offer("1.0.0", "v1")),
			peerRelease: ">= 9",
			welcome:     welcome("3.0.0", "v1", "1.31.2"),
			reason:      handshake.ReasonVersionMismatch,
			message:     "nodecontroller agreed nodestatus 3.0.0, which kubelet never offered: the server is misbehaving",
		}, {
			name:        "the fingerprint is checked before the release",
			offers:      offers(offer("1.0.0", "v1")),
			peerRelease: ">= 9",
			welcome:     welcome("1.0.0", "v0", "1.31.2"),
			reason:      handshake.ReasonFingerprintMismatch,
			message: "nodecontroller agreed nodestatus 1.0.0 with fingerprint " + fp("v0") + ", but kubelet has " + fp("v1") +
				": regenerate both from the same contract or bump the version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refusal := handshake.CheckWelcome("nodestatus", "kubelet", tt.offers, tt.peerRelease, tt.welcome)
			if tt.reason == "" {
				if refusal != nil {
					t.Fatalf("refused: %v", refusal)
				}
				return
			}
			if refusal == nil {
				t.Fatalf("accepted, want a %s refusal", tt.reason)
			}
			want := &handshake.Refusal{
				Code: handshake.CodeIncompatiblePeer, Reason: tt.reason, Contract: "nodestatus", Message: tt.message,
				Server: handshake.SideInfo{Component: "nodecontroller", Release: tt.welcome.Peer.Release,
					Offers: offers(handshake.Offer{Version: tt.welcome.Version, Fingerprint: tt.welcome.Fingerprint})},
				Client: handshake.SideInfo{Component: "kubelet", Offers: tt.offers},
			}
			if !reflect.DeepEqual(refusal, want) {
				t.Errorf("refusal\n got %+v\nwant %+v", refusal, want)
			}
		})
	}
}

// TestNegotiateThenCheckWelcome runs both halves: whatever the server agrees
// to, the client accepts.
func TestNegotiateThenCheckWelcome(t *testing.T) {
	t.Parallel()
	server := nodecontroller(offer("3.0", "v3"), offer("2.0.0", "v2"))
	client := offers(offer("3.0.0", "v3"), offer("2.0.0", "v2"), offer("1.0.0", "v1"))
	agreement, refusal := handshake.Negotiate(server, kubelet(client...))
	if refusal != nil {
		t.Fatal(refusal)
	}
	w := handshake.Welcome{Session: "s", Version: agreement.Version, Fingerprint: agreement.Fingerprint,
		Peer: handshake.Peer{Component: "nodecontroller", Instance: "i", Release: "1.31.2"}}
	if r := handshake.CheckWelcome("nodestatus", "kubelet", client, ">= 1.31", w); r != nil {
		t.Errorf("client refused the server's own agreement: %v", r)
	}
}

func TestHelloValidate(t *testing.T) {
	t.Parallel()
	valid := func() handshake.Hello {
		h := kubelet(offer("2.0.0", "v2"), offer("1.0.0", "v1"))
		h.PeerRelease = ">= 1.31, < 1.32"
		return h
	}
	many := make([]handshake.Offer, handshake.MaxOffers+1)
	for i := range many {
		many[i] = offer(fmt.Sprintf("%d.0.0", i), "v")
	}
	tests := []struct {
		name   string                   // what the case shows
		change func(h *handshake.Hello) // turns a valid hello into the case
		want   []string                 // substrings of the error; none for a valid hello
	}{
		{"a valid hello", func(h *handshake.Hello) {}, nil},
		{"no release and no constraint are fine", func(h *handshake.Hello) { h.Release, h.PeerRelease = "", "" }, nil},
		{"exactly MaxOffers offers", func(h *handshake.Hello) { h.Offers = many[:handshake.MaxOffers] }, nil},
		{"missing contract", func(h *handshake.Hello) { h.Contract = "" }, []string{"contract is required"}},
		{"missing component", func(h *handshake.Hello) { h.Component = "" }, []string{"component is required"}},
		{"missing instance", func(h *handshake.Hello) { h.Instance = "" }, []string{"instance is required"}},
		{"no offers", func(h *handshake.Hello) { h.Offers = nil }, []string{"offers must name at least one version"}},
		{"too many offers", func(h *handshake.Hello) { h.Offers = many }, []string{"65 versions offered, at most 64 allowed"}},
		{"an offer that is not a version", func(h *handshake.Hello) { h.Offers[1].Version = "one" }, []string{`offers[1]: version "one" is not a semantic version`}},
		{"an empty version", func(h *handshake.Hello) { h.Offers[0].Version = "" }, []string{`offers[0]: version "" is not a semantic version`}},
		{"an upper-case fingerprint", func(h *handshake.Hello) { h.Offers[0].Fingerprint = strings.ToUpper(h.Offers[0].Fingerprint) }, []string{"offers[0]: fingerprint", "not of the form lsfp1:<64 hex digits>"}},
		{"a fingerprint of another algorithm", func(h *handshake.Hello) { h.Offers[0].Fingerprint = "lsfp2:" + strings.TrimPrefix(fp("x"), "lsfp1:") }, []string{"offers[0]: fingerprint"}},
		{"a short fingerprint", func(h *handshake.Hello) { h.Offers[0].Fingerprint = h.Offers[0].Fingerprint[:20] }, []string{"offers[0]: fingerprint"}},
		{"a fingerprint with a newline", func(h *handshake.Hello) { h.Offers[0].Fingerprint += "\n" }, []string{"offers[0]: fingerprint"}},
		{"a version offered twice", func(h *handshake.Hello) { h.Offers[1].Version = "2.0.0" }, []string{"offers[1]: version 2.0.0 is offered twice"}},
		{"a version offered twice in two spellings", func(h *handshake.Hello) { h.Offers[1].Version = "2.0" }, []string{"offers[1]: version 2.0 is offered twice"}},
		{"a version offered twice with build metadata", func(h *handshake.Hello) { h.Offers[1].Version = "v2.0.0+b1" }, []string{"offers[1]: version v2.0.0+b1 is offered twice"}},
		{"a release that is not a version", func(h *handshake.Hello) { h.Release = "latest" }, []string{`release "latest" is not a version`}},
		{"a constraint that does not parse", func(h *handshake.Hello) { h.PeerRelease = "newest" }, []string{`peerRelease "newest" is not a version constraint`}},
		{"every problem at once", func(h *handshake.Hello) { *h = handshake.Hello{Release: "x", PeerRelease: "y"} },
			[]string{"contract is required", "component is required", "instance is required", "offers must name", `release "x"`, `peerRelease "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := valid()
			h.Offers = append([]handshake.Offer(nil), h.Offers...)
			tt.change(&h)
			err := h.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted the hello")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestValidateOffers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string            // what the case shows
		offers []handshake.Offer // the offers
		want   []string          // substrings of the error; none when valid
	}{
		{"none", nil, nil},
		{"one", offers(offer("1.0.0", "v1")), nil},
		{"a fork window", offers(offer("3.0.0", "v3"), offer("2.0.0", "v2"), offer("1.0.0", "v1")), nil},
		{"a release and its pre-release are two versions", offers(offer("2.0.0", "v2"), offer("2.0.0-rc.1", "rc")), nil},
		{"a pre-release across segment counts is not the release", offers(offer("2.0.0", "v2"), offer("2.0.0.0-beta", "b")), nil},
		{"the same pre-release twice", offers(offer("2.0.0-rc.1", "a"), offer("2.0.0-rc.1+x", "b")), []string{"offers[1]: version 2.0.0-rc.1+x is offered twice"}},
		{"extra zero segments are the same version", offers(offer("2", "a"), offer("2.0.0.0", "b")), []string{"offers[1]: version 2.0.0.0 is offered twice"}},
		{"three copies are reported twice", offers(offer("1.0.0", "a"), offer("1.0", "b"), offer("1", "c")),
			[]string{"offers[1]: version 1.0 is offered twice", "offers[2]: version 1 is offered twice"}},
		{"bad version and bad fingerprint", offers(handshake.Offer{Version: "x", Fingerprint: "y"}, handshake.Offer{Version: "1.0.0", Fingerprint: "lsfp1:"}),
			[]string{`offers[0]: version "x"`, `offers[1]: fingerprint "lsfp1:"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := handshake.ValidateOffers(tt.offers)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("ValidateOffers: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("ValidateOffers accepted the offers")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
