package jsonwire

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendersMatchEncodingJSON compares the append helpers with
// json.Marshal on random strings (bytes of every kind, invalid UTF-8,
// U+2028/U+2029 and HTML characters among them), random float bit
// patterns of both widths, integers, times and raw JSON.
func TestAppendersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"<", ">", "&", "\u2028", "\u2029", "\xff", "\xe2\x80", "é", "😀", "\"", "\\", "\x00", "\x1f", "\x7f", " ", "a"}
	for i := 0; i < 20000; i++ {
		var s []byte
		for n := rng.IntN(12); n > 0; n-- {
			if rng.IntN(2) == 0 {
				s = append(s, pieces[rng.IntN(len(pieces))]...)
			} else {
				s = append(s, byte(rng.IntN(256)))
			}
		}
		same(t, AppendString(nil, string(s)), string(s))
	}
	for i := 0; i < 20000; i++ {
		f := math.Float64frombits(rng.Uint64())
		if i%4 == 0 {
			f = float64(rng.IntN(1e6)) * math.Pow(10, float64(rng.IntN(50)-25))
		}
		got, err := AppendFloat64(nil, f)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			if err == nil {
				t.Fatalf("%v: no error", f)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, f)
		f32 := math.Float32frombits(rng.Uint32())
		got, err = AppendFloat32(nil, f32)
		if math.IsNaN(float64(f32)) || math.IsInf(float64(f32), 0) {
			if err == nil {
				t.Fatalf("%v: no error", f32)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, f32)
	}
	for _, v := range []int64{0, -1, 1, math.MaxInt64, math.MinInt64} {
		same(t, AppendInt(nil, v), v)
	}
	same(t, AppendUint(nil, math.MaxUint64), uint64(math.MaxUint64))
	same(t, AppendBool(nil, true), true)
	same(t, AppendBool(nil, false), false)
	for _, tm := range []time.Time{{}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", -7*3600)), time.Unix(1, 0).UTC()} {
		got, err := AppendTime(nil, tm)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, tm)
	}
	for _, raw := range []string{`1`, ` 1 `, `{"a" : "<\u2028>"}`, `["\"", "\\"]`, "\"\xe2\x80\xa8\"", `"a b"`, `[1,{"x":null}]`} {
		got, err := AppendRaw(nil, []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		same(t, got, json.RawMessage(raw))
	}
	for _, raw := range []string{``, `{`, `1 2`, `"`} {
		if _, err := AppendRaw(nil, []byte(raw)); err == nil {
			t.Errorf("%q: no error", raw)
		}
	}
}

func same(t *testing.T, got []byte, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%#v: appended %s, json.Marshal wrote %s", v, got, want)
	}
}
