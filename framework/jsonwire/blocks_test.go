package jsonwire

import "testing"

// TestBlocks: a Blocks hands out distinct zero blocks, in chunks as large
// as handed out before (or as reserved), and a nil one allocates each.
func TestBlocks(t *testing.T) {
	var b Blocks[[2]string]
	seen := map[*[2]string]bool{}
	allocs := testing.AllocsPerRun(1, func() {
		b = Blocks[[2]string]{}
		clear(seen)
		for range 7 { // chunks of 2, 2, 4
			p := b.New()
			if seen[p] || *p != [2]string{} {
				t.Fatalf("block %p handed out twice or not zero", p)
			}
			seen[p] = true
			p[0] = "x"
		}
	})
	if allocs > 3+1 { // the three chunks, and the map's growth at most
		t.Errorf("7 blocks took %v allocations, want 3 chunks", allocs)
	}
	var r Blocks[int]
	r.Reserve(5)
	first := r.New()
	for range 4 {
		r.New()
	}
	if got := cap(r.free); got != 0 {
		t.Errorf("a reserved chunk of 5 has %d left after 5 blocks", got)
	}
	_ = first
	var none *Blocks[int]
	if p, q := none.New(), none.New(); p == q {
		t.Error("a nil Blocks handed out one block twice")
	}
}

// TestSkipNumberAllocatesNothing: skipping a number (Skip, RawBytes)
// checks its grammar without copying its text.
func TestSkipNumberAllocatesNothing(t *testing.T) {
	data := []byte(`[123456789, -0.5e+10, 7]`)
	allocs := testing.AllocsPerRun(100, func() {
		d := NewSharedDecoder(data)
		if err := d.Skip(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Skip of an array of numbers took %v allocations, want 0", allocs)
	}
	d := NewSharedDecoder([]byte(`12.e3`))
	if err := d.Skip(); err == nil {
		t.Error("Skip accepted 12.e3")
	}
}
