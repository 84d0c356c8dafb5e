package jsonwire_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// skipAll reads one value of any type and checks nothing follows.
func skipAll(data []byte) error {
	d := jsonwire.NewDecoder(data)
	if err := d.Skip(); err != nil {
		return err
	}
	return d.End()
}

func TestDecoderSyntaxAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range syntaxSamples {
		if got, want := skipAll([]byte(in)) == nil, json.Valid([]byte(in)); got != want {
			t.Errorf("%q: decoder accepts %v, encoding/json %v", in, got, want)
		}
	}
}

var syntaxSamples = []string{
	``, ` `, `null`, `nul`, `nulll`, `true`, `tru`, `false `, `0`, `-0`, `01`, `-`, `1.`, `1.0`, `.5`, `1e`, `1e+`, `1E-2`,
	`1e2.5`, `"a"`, `"a`, `"\u00e9"`, `"\u00"`, `"\x"`, "\"\t\"", "\"\xff\"", `[]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`,
	`{}`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":{}}`, `{"a":{} "b":1}`, `{"a":[]}`,
	`[[[]]]`, `[[[]]`, `{"a":[1,{"b":null}]}`, `1 2`, `{} }`, ` [ 1 , 2 ] `, `"\ud800"`, `"\/"`,
	`{,"a":1}`, `[,]`, `[1,,2]`, `{"a":1,,"b":2}`, `[1, 2]`, `{"a":1, "b":2}`, `[1,2,`, `{"a":1,`, `[1,2]]`,
	`{"a":[1,2],"b":{"c":3,"d":[]}}`, `[{"a":1},{"b":2}]`, `{"a":1,}`, `[1,]`,
}

// FuzzDecoderSyntax checks that the decoder accepts exactly the JSON
// encoding/json accepts, and reads strings as it does.
func FuzzDecoderSyntax(f *testing.F) {
	for _, s := range syntaxSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := skipAll(data) == nil, json.Valid(data); got != want {
			t.Fatalf("%q: decoder accepts %v, encoding/json %v", data, got, want)
		}
		var want string
		if len(data) == 0 || data[0] != '"' || json.Unmarshal(data, &want) != nil {
			return
		}
		d := jsonwire.NewDecoder(data)
		got, err := d.String()
		if err != nil || got != want {
			t.Fatalf("%q: decoder read %q, %v; encoding/json %q", data, got, err, want)
		}
	})
}

func TestIntegers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// in is the JSON number.
		in string
		// want is the int64 read, when ok.
		want int64
		// ok says whether it decodes; unrepresentable whether the failure
		// is a range one.
		ok, unrepresentable bool
	}{
		{"0", 0, true, false},
		{"-0", 0, true, false},
		{"1.0", 1, true, false},
		{"1e2", 100, true, false},
		{"1.5e1", 15, true, false},
		{"-12.50e1", -125, true, false},
		{"150e-1", 15, true, false},
		{"9223372036854775807", 9223372036854775807, true, false},
		{"-9223372036854775808", -9223372036854775808, true, false},
		{"9223372036854775808", 0, false, true},
		{"1e19", 0, false, true},
		{"1e400", 0, false, true},
		{"1e999999999999", 0, false, true},
		{"1.5", 0, false, false},
		{"1e-1", 0, false, false},
		{"1e-999999999999", 0, false, false},
		{"0e-999999999999", 0, true, false},
		{`"1"`, 0, false, false},
		{"null", 0, false, false},
	}
	for _, tt := range tests {
		d := jsonwire.NewDecoder([]byte(tt.in))
		got, err := d.Int64()
		if (err == nil) != tt.ok || tt.ok && got != tt.want {
			t.Errorf("%s: %d, %v", tt.in, got, err)
			continue
		}
		if errors.Is(err, jsonwire.ErrUnrepresentable) != tt.unrepresentable {
			t.Errorf("%s: unrepresentable = %v (%v)", tt.in, !tt.unrepresentable, err)
		}
	}
	d := jsonwire.NewDecoder([]byte("2147483648"))
	if _, err := d.Int32(); !errors.Is(err, jsonwire.ErrUnrepresentable) {
		t.Errorf("int32 overflow: %v", err)
	}
	d = jsonwire.NewDecoder([]byte("-1"))
	if _, err := d.Uint64(); !errors.Is(err, jsonwire.ErrUnrepresentable) {
		t.Errorf("negative uint64: %v", err)
	}
	d = jsonwire.NewDecoder([]byte("18446744073709551615"))
	if v, err := d.Uint64(); err != nil || v != 18446744073709551615 {
		t.Errorf("max uint64: %d, %v", v, err)
	}
}

// FuzzIntegers checks Int64 against exact arithmetic on every number.
func FuzzIntegers(f *testing.F) {
	for _, s := range []string{"0", "1.0", "1e2", "-12.50e1", "9223372036854775807", "9223372036854775808", "1.5", "12e-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 || !json.Valid([]byte(s)) || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
			return
		}
		var n json.Number
		if json.Unmarshal([]byte(s), &n) != nil {
			return
		}
		r, ok := new(big.Rat).SetString(string(n))
		if !ok {
			return
		}
		d := jsonwire.NewDecoder([]byte(s))
		got, err := d.Int64()
		switch {
		case !r.IsInt():
			if err == nil || errors.Is(err, jsonwire.ErrUnrepresentable) {
				t.Fatalf("%s is no integer, read %d, %v", s, got, err)
			}
		case !r.Num().IsInt64():
			if !errors.Is(err, jsonwire.ErrUnrepresentable) {
				t.Fatalf("%s is out of range, read %d, %v", s, got, err)
			}
		default:
			if err != nil || got != r.Num().Int64() {
				t.Fatalf("%s: read %d, %v", s, got, err)
			}
		}
	})
}

var dateTimeSamples = []string{
	"2026-11-30T05:00:00Z", "2026-11-30t05:00:00z", "2026-11-30T05:00:00.5+01:30", "2026-11-30T05:00:00.123456789123-00:00",
	"1990-12-31T23:59:60Z", "1990-12-31T15:59:60-08:00", "1990-12-31T23:58:60Z", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z",
	"2026-11-30T24:00:00Z", "2026-11-30T05:60:00Z", "2026-11-30 05:00:00Z", "2026-11-30T05:00:00", "2026-11-30T05:00:00.Z",
	"2026-11-30T+5:00:00Z", "2026-11-30T05:00:00+24:00", "2026-11-30T05:00:00+01", "0000-01-01T00:00:00Z", "",
}

// FuzzDateTime checks that the decoder's date-time accepts exactly what
// jsonschema/v5's format check accepts, and reads the instant time.Parse
// reads wherever that succeeds.
func FuzzDateTime(f *testing.F) {
	for _, s := range dateTimeSamples {
		f.Add(s)
	}
	isDateTime := jsonschema.Formats["date-time"]
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := jsonwire.ParseDateTime(s)
		if ok != isDateTime(s) {
			t.Fatalf("%q: parsed %v, jsonschema/v5 says %v", s, ok, !ok)
		}
		if want, err := time.Parse(time.RFC3339Nano, s); ok && err == nil && !got.Equal(want) {
			t.Fatalf("%q: parsed %v, time.Parse %v", s, got, want)
		}
	})
}

func TestLeapSecondIsTheNextSecond(t *testing.T) {
	t.Parallel()
	got, ok := jsonwire.ParseDateTime("1990-12-31T15:59:60-08:00")
	if !ok || !got.Equal(time.Date(1991, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("got %v, %v", got, ok)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]jsonwire.Kind{
		"null": jsonwire.KindNull, "": jsonwire.KindNull, "true": jsonwire.KindBoolean, "1.0": jsonwire.KindInteger,
		"1.5": jsonwire.KindNumber, `"s"`: jsonwire.KindString, " [1] ": jsonwire.KindArray, `{"a":1}`: jsonwire.KindObject,
		"[1,": jsonwire.KindInvalid, "1 2": jsonwire.KindInvalid,
	} {
		if got := jsonwire.KindOf([]byte(in)); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestDecodeErrorsPointAtTheValue(t *testing.T) {
	t.Parallel()
	err := jsonwire.Within(jsonwire.WithinIndex(jsonwire.NotNull(new(jsonwire.Decoder), "string"), 2), "a/b")
	var de *jsonwire.DecodeError
	if !errors.As(err, &de) || de.Pointer() != "/a~1b/2" || de.Keyword != "type" {
		t.Errorf("got %v", err)
	}
	if err.Error() != "/a~1b/2: expected string, but got null" {
		t.Errorf("message %q", err)
	}
}

func TestValidationError(t *testing.T) {
	t.Parallel()
	var v jsonwire.Validation
	if v.Err("M") != nil {
		t.Fatal("an empty validation failed")
	}
	at := (*jsonwire.Path)(nil).Member("x~y")
	kw := (*jsonwire.Path)(nil).Keyword("properties/x~0y")
	item := at.Index(3)
	v.Fail(&item, "", &kw, "items/minLength", "too short")
	v.Fail(nil, "", nil, "required", `missing properties: "z"`)
	q := v.Quiet()
	q.Fail(nil, "", nil, "type", "ignored")
	if q.OK() || len(q.Violations()) != 0 {
		t.Error("a quiet validation must count failures without recording them")
	}
	err := v.Err("M")
	if framework.CodeOf(err) != framework.CodeInvalidArgument {
		t.Fatalf("code of %v", err)
	}
	var fe *framework.Error
	errors.As(err, &fe)
	var details struct {
		Violations []jsonwire.Violation `json:"violations"`
	}
	if err := json.Unmarshal(fe.Details(), &details); err != nil {
		t.Fatal(err)
	}
	want := []jsonwire.Violation{
		{Instance: "/x~0y/3", Keyword: "/properties/x~0y/items/minLength", Message: "too short"},
		{Instance: "", Keyword: "/required", Message: `missing properties: "z"`},
	}
	if len(details.Violations) != 2 || details.Violations[0] != want[0] || details.Violations[1] != want[1] {
		t.Errorf("violations %+v", details.Violations)
	}
	if fe.Message() != `M does not match its schema: /x~0y/3: too short; /: missing properties: "z"` {
		t.Errorf("message %q", fe.Message())
	}
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	if i, j, dup := jsonwire.Duplicate([]string{"a", "b", "a"}); !dup || i != 0 || j != 2 {
		t.Errorf("got %d %d %v", i, j, dup)
	}
	many := make([]int, 100)
	for i := range many {
		many[i] = i
	}
	if _, _, dup := jsonwire.Duplicate(many); dup {
		t.Error("distinct items reported equal")
	}
	many[99] = 5
	if i, j, dup := jsonwire.Duplicate(many); !dup || i != 5 || j != 99 {
		t.Errorf("got %d %d %v", i, j, dup)
	}
	one := 1
	if _, _, dup := jsonwire.DuplicatePointer([]*int{nil, &one, nil}); !dup {
		t.Error("two nulls are equal")
	}
}

func TestPatternRemembersAnswers(t *testing.T) {
	t.Parallel()
	p := jsonwire.NewPattern(`^[0-9]+(m|Ki)?$`)
	for i := 0; i < 3; i++ {
		for s, want := range map[string]bool{"110": true, "3800m": true, "16Gi": false, "": false, strings.Repeat("1", 100): true, strings.Repeat("1", 100) + "x": false} {
			if got := p.MatchString(s); got != want {
				t.Errorf("round %d: MatchString(%q) = %v", i, s, got)
			}
		}
	}
	// Many distinct strings share the table's slots without confusion.
	for i := 0; i < 2000; i++ {
		s := strconv.Itoa(i)
		if !p.MatchString(s) || p.MatchString(s+"x") {
			t.Fatalf("wrong answer for %s", s)
		}
	}
}

// TestSharedDecoderStringsAliasTheInput: a shared decoder's strings are
// slices of its input, not of a copy (nothing is copied), while
// NewDecoder's are slices of one copy; a string with escapes is decoded
// into memory of its own either way.
func TestSharedDecoderStringsAliasTheInput(t *testing.T) {
	data := []byte(`["plain","esc\u0061ped"]`)
	within := func(s string, b []byte) bool {
		p, lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[len(b)-1]))
		return p >= lo && p <= hi
	}
	read := func(d jsonwire.Decoder) (plain, escaped string) {
		if err := d.ArrayStart(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for d.NextItem() {
			s, err := d.String()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if err := d.End(); err != nil || len(got) != 2 {
			t.Fatalf("got %q, %v", got, err)
		}
		return got[0], got[1]
	}
	plain, escaped := read(jsonwire.NewSharedDecoder(data))
	if plain != "plain" || escaped != "escaped" {
		t.Fatalf("decoded %q, %q", plain, escaped)
	}
	if !within(plain, data) {
		t.Error("a shared decoder copied a plain string")
	}
	if within(escaped, data) {
		t.Error("an escaped string aliases the input")
	}
	plain, _ = read(jsonwire.NewDecoder(data))
	if within(plain, data) {
		t.Error("NewDecoder's string aliases the caller's input")
	}
	data[2] = 'P'
	if plain != "plain" {
		t.Error("NewDecoder's string changed with the input")
	}
}

// TestStringsAgreeWithEncodingJSON puts each byte that ends a string's
// plain run (backslash escapes, control characters, UTF-8 and invalid
// bytes; a bare quote ends it, which the closing quote covers) at every
// offset of strings shorter and longer than the eight bytes the decoder
// scans at a time, with and without data after the string, and checks
// that the decoder accepts, refuses and reads them as encoding/json does.
func TestStringsAgreeWithEncodingJSON(t *testing.T) {
	t.Parallel()
	specials := []string{`\"`, `\\`, `\n`, `\u00e9`, "\t", "\x00", "\x1f", "é", "\xff", "\xe2\x82", "\x7f", " "}
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				body := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				for _, tail := range []string{``, `,"x":1}`, `          `} {
					in := `"` + body + `"` + tail
					var want string
					wantErr := json.Unmarshal([]byte(`"`+body+`"`), &want)
					d := jsonwire.NewDecoder([]byte(in))
					got, err := d.String()
					if (err == nil) != (wantErr == nil) || got != want {
						t.Fatalf("%q: decoder read %q (%v), encoding/json %q (%v)", in, got, err, want, wantErr)
					}
				}
			}
		}
	}
}
