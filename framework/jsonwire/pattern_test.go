package jsonwire_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// TestECMAPatterns checks the ECMA-262 features RE2 lacks on the engine
// generated code uses for them.
func TestECMAPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// pattern is the schema's pattern, s the string, want the match.
		pattern, s string
		want       bool
	}{
		{`^(?!eval$).*$`, "evaluate", true},
		{`^(?!eval$).*$`, "eval", false},
		{`(?<=\$)[0-9]+`, "$42", true},
		{`(?<=\$)[0-9]+`, "€42", false},
		{`^(ab)\1$`, "abab", true},
		{`^(ab)\1$`, "abba", false},
		// ECMA-262's \d and \w are ASCII, as RE2's are.
		{`^\d+$`, "١٢", false},
	}
	for _, tt := range tests {
		if !jsonwire.CompilesAsECMA(tt.pattern) {
			t.Fatalf("%s does not compile", tt.pattern)
		}
		p := jsonwire.NewECMAPattern(tt.pattern)
		if !p.ECMA() || p.String() != tt.pattern {
			t.Errorf("%s: ECMA %v, String %q", tt.pattern, p.ECMA(), p.String())
		}
		for range 2 { // the second answer is the remembered one
			if got := p.MatchString(tt.s); got != tt.want {
				t.Errorf("%s on %q: %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		}
	}
	if jsonwire.CompilesAsECMA(`(unclosed`) {
		t.Error("(unclosed compiles")
	}
}

// TestECMAPatternBacktrackingIsBounded checks that a pattern whose
// backtracking is exponential in its input ends within its time bound on
// a peer's string built to take forever, and refuses it, and that a string
// longer than ECMAMaxInput is refused without being matched.
func TestECMAPatternBacktrackingIsBounded(t *testing.T) {
	t.Parallel()
	p := jsonwire.NewECMAPattern(`^(a+)+$`)
	if !p.MatchString("aaaa") {
		t.Fatal("^(a+)+$ does not match aaaa")
	}
	// 2^40 ways to split the a's before the engine gives up on the '!'.
	evil := strings.Repeat("a", 40) + "!"
	start := time.Now()
	if p.MatchString(evil) {
		t.Error("matched a string that does not match")
	}
	// The bound is 50 ms of matching; a loaded machine gets a wide margin.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the match took %v, beyond its bound %v", took, jsonwire.ECMAMatchTimeout)
	}
	long := strings.Repeat("a", jsonwire.ECMAMaxInput+1)
	if p.MatchString(long) {
		t.Errorf("a string of %d characters matched, beyond the bound of %d", len(long), jsonwire.ECMAMaxInput)
	}
	if !p.MatchString(long[:jsonwire.ECMAMaxInput]) {
		t.Errorf("a string of %d characters did not match", jsonwire.ECMAMaxInput)
	}
}
