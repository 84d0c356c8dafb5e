package frames

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Head is everything a frame of a watch stream says besides its object.
type Head struct {
	Type       string `json:"type"`
	Key        string `json:"key"`
	Epoch      string `json:"epoch"`
	Seq        uint64 `json:"seq"`
	Rev        uint64 `json:"rev"`
	WriterLost bool   `json:"writerLost"`
	Instance   string `json:"instance"`
	History    string `json:"history"`
	Resumed    bool   `json:"resumed"`
	Writer     *bool  `json:"writer"`
	Reason     string `json:"reason"`
	// Header is the header of the write that made a set or delete
	// (its trace context), when it carried one.
	Header map[string]string `json:"header"`
}

// Frame is one frame of a watch stream, decoded in one pass with its
// object.
type Frame[T any] struct {
	Head
	Object *T `json:"object"`
}

// Frames are read with jsonwire's decoder, the one JSON scanner of the
// runtime and of generated code, in one pass. A member the reader does
// not expect (unknown, repeated, or a name encoding/json would match only
// case-insensitively), a number that is not a plain unsigned integer, and
// any syntax error mean "not the plain shape": the frame is decoded with
// encoding/json instead, with the same result. decode_test.go compares
// the two.

// The members of a frame, numbered for the reader's set of members seen.
const (
	memberType = iota
	memberKey
	memberEpoch
	memberSeq
	memberRev
	memberWriterLost
	memberInstance
	memberHistory
	memberResumed
	memberWriter
	memberReason
	memberObject
	memberHeader
)

// frameMember maps a member's name to its number.
var frameMember = map[string]int{
	"type": memberType, "key": memberKey, "epoch": memberEpoch, "seq": memberSeq,
	"rev": memberRev, "writerLost": memberWriterLost, "instance": memberInstance,
	"history": memberHistory, "resumed": memberResumed, "writer": memberWriter,
	"reason": memberReason, "object": memberObject, "header": memberHeader,
}

// Read reads a frame in one pass: its head, and its object's text, nil
// when absent or null. Strings are slices of line (see [Decode]). false
// means "decode with encoding/json".
func Read(line []byte) (head Head, object []byte, ok bool) {
	head, object, _, ok = read(line, false)
	return head, object, ok
}

// read is [Read]; with objectLast, an object that the frame's closing
// brace ends (the layout [EncodeSet] writes) is returned unscanned, and
// last says so: its text then ends where the frame does, and only a
// decoder that checks it in full (and that nothing follows it) may take
// it, or the frame must be read again without objectLast.
func read(line []byte, objectLast bool) (head Head, object []byte, last, ok bool) {
	d := jsonwire.NewSharedDecoder(line)
	if d.ObjectStart() != nil {
		return head, nil, false, false
	}
	var seen uint16
	for d.NextMember() {
		n, known := frameMember[string(d.Key())]
		if !known || seen&(1<<n) != 0 {
			return head, nil, false, false
		}
		seen |= 1 << n
		var err error
		switch n {
		case memberObject:
			if d.Null() {
				break
			}
			if objectLast {
				start := d.Mark()
				rest := bytes.TrimRight(line[start:], " \t\r\n")
				if len(rest) > 1 && rest[len(rest)-1] == '}' {
					return head, rest[:len(rest)-1], true, true
				}
			}
			object, err = d.RawBytes()
		case memberHeader:
			head.Header, err = ReadHeader(&d)
		case memberWriter:
			if !d.Null() {
				w, bErr := d.Bool()
				head.Writer, err = &w, bErr
			}
		default:
			err = head.read(&d, n)
		}
		if err != nil {
			return head, nil, false, false
		}
	}
	return head, object, false, d.End() == nil
}

// read reads the head's member numbered n.
func (h *Head) read(d *jsonwire.Decoder, n int) error {
	var err error
	switch n {
	case memberType:
		h.Type, err = d.String()
	case memberKey:
		h.Key, err = d.String()
	case memberEpoch:
		h.Epoch, err = d.String()
	case memberInstance:
		h.Instance, err = d.String()
	case memberHistory:
		h.History, err = d.String()
	case memberReason:
		h.Reason, err = d.String()
	case memberSeq:
		h.Seq, err = plainUint(d)
	case memberRev:
		h.Rev, err = plainUint(d)
	case memberWriterLost:
		h.WriterLost, err = d.Bool()
	case memberResumed:
		h.Resumed, err = d.Bool()
	}
	return err
}

// errNotPlain is what the readers return for a value they leave to
// encoding/json.
var errNotPlain = errors.New("not in the plain shape")

// plainUint reads an unsigned integer written in digits only, as
// encoding/json reads one into a uint64.
func plainUint(d *jsonwire.Decoder) (uint64, error) {
	b, err := d.RawBytes()
	if err != nil {
		return 0, err
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNotPlain
		}
	}
	if len(b) == 0 || (len(b) > 1 && b[0] == '0') {
		return 0, errNotPlain
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// ReadHeader reads a header object (names to one string value each), as
// a frame's "header" member carries it; null and repeated names are left
// to encoding/json (an error). Its strings are copies.
func ReadHeader(d *jsonwire.Decoder) (map[string]string, error) {
	if d.Peek() == jsonwire.KindNull {
		return nil, errNotPlain
	}
	if err := d.ObjectStart(); err != nil {
		return nil, err
	}
	h := map[string]string{}
	for d.NextMember() {
		k := string(d.Key())
		b, err := d.StringBytes()
		if err != nil {
			return nil, err
		}
		if _, dup := h[k]; dup {
			return nil, errNotPlain
		}
		h[k] = string(b)
	}
	return h, d.Err()
}

// TypeKey reads a frame's type, key and revision without decoding its
// object, which it skips. The key only decides which queued frame a frame
// replaces; the processor decodes each frame in full before using it. line
// is the reader's buffer: what it returns is copied.
func TypeKey(line []byte) (typ, key string, rev uint64, ok bool) {
	if head, _, ok := Read(line); ok {
		return frameType(head.Type), strings.Clone(head.Key), head.Rev, true
	}
	var f struct {
		Type string `json:"type"`
		Key  string `json:"key"`
		Rev  uint64 `json:"rev"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return "", "", 0, false
	}
	return f.Type, f.Key, f.Rev, true
}

// frameType is typ as one of the protocol's constants when it is one, so
// that the common types cost no copy; others are copied.
func frameType(typ string) string {
	switch typ {
	case protocol.FrameSet:
		return protocol.FrameSet
	case protocol.FrameDelete:
		return protocol.FrameDelete
	case protocol.FrameSynced:
		return protocol.FrameSynced
	case protocol.FrameClosing:
		return protocol.FrameClosing
	}
	return strings.Clone(typ)
}

// Decode decodes one frame in one pass ([Read]), so that only the object
// goes through a decoder of its own; a frame the reader leaves to
// encoding/json is decoded in full with it, with the same result.
//
// line must never be modified again: on the fast path the frame's strings
// and the object's strings are slices of it, not copies (see
// jsonwire.NewSharedDecoder). The informers' frames are: their feed
// reads each into a buffer of its own and only ever shares it, so the
// frame one write sends costs no copy per informer.
func Decode[T any](line []byte, f *Frame[T]) error {
	// A generated decoder checks the whole object and that nothing
	// follows it, so an object that ends the frame is handed to it
	// unscanned rather than read twice (once to find its end); any other
	// frame is read in full all the same.
	_, shared := any((*T)(nil)).(jsonwire.SharedUnmarshaler)
	head, object, last, ok := read(line, shared)
	if ok && decodeObject(object, head, f) {
		return nil
	}
	if last {
		if head, object, ok := Read(line); ok && decodeObject(object, head, f) {
			return nil
		}
	}
	// Decoded into a frame of its own, so that only this path moves a
	// frame to the heap: f is the caller's, most often on its stack.
	var full Frame[T]
	err := json.Unmarshal(line, &full)
	*f = full
	return err
}

// decodeObject sets *f to head with object decoded (nil when absent),
// and says whether object decoded.
func decodeObject[T any](object []byte, head Head, f *Frame[T]) bool {
	var obj *T
	if object != nil {
		obj = new(T)
		if UnmarshalShared(object, obj) != nil {
			return false
		}
	}
	*f = Frame[T]{Head: head, Object: obj}
	return true
}

// UnmarshalShared is [UnmarshalObject] for raw that is never modified
// again: a generated message type decodes it without copying it.
func UnmarshalShared(raw []byte, obj any) error {
	if u, ok := obj.(jsonwire.SharedUnmarshaler); ok {
		return u.UnmarshalSharedJSON(raw)
	}
	return UnmarshalObject(raw, obj)
}

// UnmarshalObject decodes an object. A type with a decoder of its own
// (generated code) is handed the bytes directly, without encoding/json's
// separate pass to check them.
func UnmarshalObject(raw []byte, obj any) error {
	if u, ok := obj.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	return json.Unmarshal(raw, obj)
}

// ReadLine reads one frame's line of at most limit bytes, longer lines
// gathered in *scratch; the slice is valid until the next read. A longer
// line is a payload_too_large error.
func ReadLine(br *bufio.Reader, scratch *[]byte, limit int64) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	buf := append((*scratch)[:0], line...)
	for {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
		if int64(len(buf)) > limit {
			return nil, apierror.Errorf(apierror.CodePayloadTooLarge, "watch frame exceeds %d bytes", limit)
		}
		if err == nil {
			*scratch = buf
			return buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}
