package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// stamped encodes itself in a form json.Marshal would never write, so a
// test can tell which encoder ran.
type stamped struct{ N int }

func (s *stamped) AppendJSON(b []byte) ([]byte, error) {
	if s.N < 0 {
		return b, errors.New("negative")
	}
	return append(b, `{"by":"AppendJSON"}`...), nil
}

func TestMarshalUsesTheGeneratedEncoder(t *testing.T) {
	got, err := marshal(&stamped{N: 1})
	if err != nil || string(got) != `{"by":"AppendJSON"}` {
		t.Fatalf("marshal = %s, %v", got, err)
	}
	again, _ := marshal(&stamped{N: 2})
	if &again[0] == &got[0] || !bytes.Equal(again, got) {
		t.Fatal("marshal returned a buffer it reuses")
	}
	if _, err := marshal(&stamped{N: -1}); err == nil {
		t.Fatal("an encoder's error was lost")
	}
	plain, err := marshal(&struct{ N int }{N: 3})
	want, _ := json.Marshal(&struct{ N int }{N: 3})
	if err != nil || !bytes.Equal(plain, want) {
		t.Fatalf("a type without an encoder: %s, %v", plain, err)
	}
}
