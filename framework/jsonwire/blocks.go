package jsonwire

// Blocks hands out the pointer blocks of the elements of one map, or of
// a slice or map being deep-copied, from a few allocations instead of one
// each. A generated struct whose optional members point to values without
// references (*string, *time.Time, *int64, …) keeps those values in one
// block, a struct of its own; the elements of a map of such structs share
// chunks of blocks: decoding, the first chunk holds two blocks and each
// later one as many as were handed out before it (so n elements take
// about log2(n) allocations, and at most half of the last chunk is
// unused), and a deep copy, which knows the count, reserves exactly one
// block per element. (A slice's decoder needs none: it makes its
// elements' blocks in one array once it knows their number.) The blocks of one chunk keep each other
// alive, as the members of one message do anyway; nothing outside the
// message shares them. The zero value is ready to use, and a nil *Blocks
// allocates each block on its own.
type Blocks[B any] struct {
	free []B
	// reserved is the size of the next chunk, when [Blocks.Reserve] set
	// it; otherwise the next chunk is as large as handed out so far.
	reserved int
	given    int
}

// Reserve makes the next chunk hold n blocks.
func (b *Blocks[B]) Reserve(n int) { b.reserved = n }

// New returns a zero block of its own.
func (b *Blocks[B]) New() *B {
	if b == nil {
		return new(B)
	}
	if len(b.free) == 0 {
		n := b.reserved
		if n > 0 {
			b.reserved = 0
		} else {
			n = max(b.given, 2)
		}
		b.free = make([]B, n)
	}
	p := &b.free[0]
	b.free = b.free[1:]
	b.given++
	return p
}
