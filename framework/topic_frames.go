package framework

// The frames of a watch stream (docs/topics.md): built once per change on
// the server and taken apart by the informer, in one place.

import (
	"bufio"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// the frames of a watch stream (docs/topics.md), built once per
// change on the server and taken apart by the informer: one place for the
// wire form of topics.

// encodeSetFrame builds a set frame once, as the change of revision rev:
// {"type":"set","key":K,"epoch":E,"seq":N,"rev":R,"object":O}\n. It
// returns the change and the object's bytes inside it.
//
// header, when not nil, is the write's header as a JSON object: the frame
// carries it as "header" before the object.
func encodeSetFrame(key string, ver ObjectVersion, rev uint64, raw, header []byte) (*topicChange, []byte) {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(raw)+len(qk)+len(ver.Epoch)+len(header)+76)
	b = append(b, `{"type":"`+protocol.FrameSet+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, rev, 10)
	if header != nil {
		b = append(append(b, `,"header":`...), header...)
	}
	b = append(b, `,"object":`...)
	start := len(b)
	b = append(b, raw...)
	end := len(b)
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b, gen: rev, version: ver, header: header}, b[start:end:end]
}

// encodeDeleteFrame builds a delete frame once, as the change of revision
// rev: {"type":"delete","key":K,"epoch":E,"seq":N,"rev":R[,"writerLost":true][,"header":H]}\n.
func encodeDeleteFrame(key string, ver ObjectVersion, rev uint64, writerLost bool, header []byte) *topicChange {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(qk)+len(ver.Epoch)+len(header)+92)
	b = append(b, `{"type":"`+protocol.FrameDelete+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, rev, 10)
	if writerLost {
		b = append(b, `,"writerLost":true`...)
	}
	if header != nil {
		b = append(append(b, `,"header":`...), header...)
	}
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b, gen: rev, version: ver, header: header}
}

// syncedMark is what a synced marker says of a stream: it has brought its
// watcher to revision rev, by resuming or not, and whether the topic had a
// live writer at that revision.
type syncedMark struct {
	rev     uint64
	resumed bool
	writer  bool
}

// appendSynced appends the synced marker m:
// {"type":"synced","instance":I,"history":H,"rev":R,"resumed":B,"writer":W}.
// It names the server instance that holds the topic, the resume point
// (the topic's history and the revision), and whether the topic had a
// live writer at that revision (writer).
func (t *topicStore) appendSynced(b []byte, m syncedMark) []byte {
	b = append(b, `{"type":"`+protocol.FrameSynced+`","instance":`...)
	b = append(b, quoteJSON(t.s.cfg.Instance)...)
	b = append(b, `,"history":"`...)
	b = append(b, t.history.id...)
	b = append(b, `","rev":`...)
	b = strconv.AppendUint(b, m.rev, 10)
	b = strconv.AppendBool(append(b, `,"resumed":`...), m.resumed)
	b = strconv.AppendBool(append(b, `,"writer":`...), m.writer)
	return append(b, "}\n"...)
}

var pingFrame = []byte(`{"type":"` + protocol.FramePing + `"}` + "\n")

// appendClosing appends a closing frame giving reason, one of the
// protocol's Close reasons.
func appendClosing(b []byte, reason string) []byte {
	b = append(b, `{"type":"`+protocol.FrameClosing+`","reason":"`...)
	b = append(b, reason...)
	return append(b, "\"}\n"...)
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// frameHead is everything a frame of a watch stream says besides its
// object.
type frameHead struct {
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

// watchFrame is one frame of a watch stream, decoded in one pass with its
// object.
type watchFrame[T any] struct {
	frameHead
	Object *T `json:"object"`
}

// Frames are read with jsonwire's decoder, the one JSON scanner of the
// runtime and of generated code, in one pass. A member the reader does
// not expect (unknown, repeated, or a name encoding/json would match only
// case-insensitively), a number that is not a plain unsigned integer, and
// any syntax error mean "not the plain shape": the frame is decoded with
// encoding/json instead, with the same result. watch_frame_test.go
// compares the two.

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

// readFrame reads a frame: its head, and its object's text, nil when
// absent or null. Strings are slices of line (see decodeFrame). false
// means "decode with encoding/json".
func readFrame(line []byte) (head frameHead, object []byte, ok bool) {
	d := jsonwire.NewSharedDecoder(line)
	if d.ObjectStart() != nil {
		return head, nil, false
	}
	var seen uint16
	for d.NextMember() {
		n, known := frameMember[string(d.Key())]
		if !known || seen&(1<<n) != 0 {
			return head, nil, false
		}
		seen |= 1 << n
		var err error
		switch n {
		case memberObject:
			if !d.Null() {
				object, err = d.RawBytes()
			}
		case memberHeader:
			head.Header, err = readHeader(&d)
		case memberWriter:
			if !d.Null() {
				w, bErr := d.Bool()
				head.Writer, err = &w, bErr
			}
		default:
			err = head.read(&d, n)
		}
		if err != nil {
			return head, nil, false
		}
	}
	return head, object, d.End() == nil
}

// read reads the head's member numbered n.
func (h *frameHead) read(d *jsonwire.Decoder, n int) error {
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

// errNotPlainUint is plainUint's answer for a number it leaves to
// encoding/json.
var errNotPlainUint = errors.New("not a plain unsigned integer")

// plainUint reads an unsigned integer written in digits only, as
// encoding/json reads one into a uint64.
func plainUint(d *jsonwire.Decoder) (uint64, error) {
	b, err := d.RawBytes()
	if err != nil {
		return 0, err
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNotPlainUint
		}
	}
	if len(b) == 0 || (len(b) > 1 && b[0] == '0') {
		return 0, errNotPlainUint
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// frameTypeKey reads a frame's type, key and revision without decoding its
// object, which it skips. The key only decides which queued frame a frame
// replaces; the processor decodes each frame in full before using it. line
// is the reader's buffer: what it returns is copied.
func frameTypeKey(line []byte) (typ, key string, rev uint64, ok bool) {
	if head, _, ok := readFrame(line); ok {
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

// decodeFrame decodes one frame in one pass (readFrame), so that only the
// object goes through a decoder of its own; a frame the reader leaves to
// encoding/json is decoded in full with it, with the same result.
//
// line must never be modified again: on the fast path the frame's strings
// and the object's strings are slices of it, not copies (see
// jsonwire.NewSharedDecoder). The informers' frames are: their feed
// reads each into a buffer of its own (readFrames) and only ever shares
// it, so the frame one write sends costs no copy per informer.
func decodeFrame[T any](line []byte, f *watchFrame[T]) error {
	if head, object, ok := readFrame(line); ok {
		var obj *T
		if object != nil {
			obj = new(T)
			ok = unmarshalShared(object, obj) == nil
		}
		if ok {
			*f = watchFrame[T]{frameHead: head, Object: obj}
			return nil
		}
	}
	// Decoded into a frame of its own, so that only this path moves a
	// frame to the heap: f is the caller's, most often on its stack.
	var full watchFrame[T]
	err := json.Unmarshal(line, &full)
	*f = full
	return err
}

// unmarshalShared is [unmarshalObject] for raw that is never modified
// again: a generated message type decodes it without copying it.
func unmarshalShared(raw []byte, obj any) error {
	if u, ok := obj.(jsonwire.SharedUnmarshaler); ok {
		return u.UnmarshalSharedJSON(raw)
	}
	return unmarshalObject(raw, obj)
}

// unmarshalObject decodes an object. A type with a decoder of its own
// (generated code) is handed the bytes directly, without encoding/json's
// separate pass to check them.
func unmarshalObject(raw []byte, obj any) error {
	if u, ok := obj.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	return json.Unmarshal(raw, obj)
}

// readFrameLine reads one line of at most limit bytes; the slice is valid
// until the next read.
func readFrameLine(br *bufio.Reader, scratch *[]byte, limit int64) ([]byte, error) {
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
			return nil, Errorf(CodePayloadTooLarge, "watch frame exceeds %d bytes", limit)
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
