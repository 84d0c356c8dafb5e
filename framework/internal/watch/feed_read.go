package watch

// Reading a feed's stream: its frames, taken apart with package frames.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// feedReadBuffer is the read buffer of a feed's stream: a flush of many
// frames is read in a few system calls.
const feedReadBuffer = 16 << 10

// streamRead is one stream being read: where it comes from and what was
// read of it so far. Only the feed's run goroutine uses it.
type streamRead struct {
	conn Conn
	// up converts the objects of a stream at a fork version up, once for
	// every subscriber; nil at the client's own version.
	up func(object []byte) ([]byte, error)
	// resumed: the stream continues the last one, so its frames before
	// synced are changes like those after it. Any other starts with a
	// snapshot, collected in snapshot until its synced marker comes.
	resumed  bool
	snapshot map[string]*feedFrame
	synced   bool
	// queued is set while changes handed on wait for the subscribers'
	// wake, which comes at the end of the burst: before a read that may
	// wait for the connection, and when the stream ends.
	queued bool
}

// newStreamRead starts the reading of a stream through conn.
func (f *feed) newStreamRead(conn Conn, resumed bool) *streamRead {
	r := &streamRead{conn: conn, resumed: resumed}
	if conn != nil {
		r.up = conn.Up()
	}
	if !resumed {
		r.snapshot = map[string]*feedFrame{}
	}
	return r
}

// readFrames reads one stream's frames to its end: the snapshot, collected
// aside until its synced marker comes, then each change, handed on as
// soon as it is read, so the connection never holds stale frames. alive
// is called on each frame (the stream is not silent). It reports whether
// the stream got as far as its synced marker.
func (f *feed) readFrames(ctx context.Context, r *streamRead, body io.Reader, alive func()) (bool, error) {
	br := bufio.NewReaderSize(body, feedReadBuffer)
	var scratch []byte
	defer func() {
		if r.queued {
			f.wakeSubscribers()
		}
	}()
	for {
		if r.queued && !lineBuffered(br) {
			f.wakeSubscribers()
			r.queued = false
		}
		line, err := frames.ReadLine(br, &scratch, f.env.MaxFrameBytes)
		if err != nil {
			if ctx.Err() != nil && f.ctx.Err() == nil {
				err = f.errStreamEnded(r.conn)
			}
			return r.synced, err
		}
		alive()
		f.frames.Add(1)
		typ, key, rev, ok := frames.TypeKey(line)
		if !ok {
			f.badFrames.Add(1)
			f.env.Logger.Warn("lockstep: watch frame does not decode", "topic", f.want.Topic)
			continue
		}
		switch typ {
		case protocol.FrameSet, protocol.FrameDelete:
			f.readChange(r, typ, key, rev, line)
		case protocol.FrameSynced, protocol.FrameClosing:
			if end, err := f.readMarker(r, line); end {
				return r.synced, err
			}
		default:
			// ping and frame types this version does not know carry nothing
		}
	}
}

// readChange takes a set or delete frame: into the snapshot being
// collected, or handed on to the subscribers, which decode the objects;
// the bytes are shared.
func (f *feed) readChange(r *streamRead, typ, key string, rev uint64, line []byte) {
	var fr *feedFrame
	if r.up != nil && typ == protocol.FrameSet {
		up, err := convertFrame(line, r.up, f.env.EncodeHeader)
		if err != nil {
			f.badFrames.Add(1)
			f.env.Logger.Warn("lockstep: watch frame does not convert", "topic", f.want.Topic, "key", key,
				"from", r.conn.Version(), "to", f.env.Version, "err", err)
			return
		}
		fr = newFeedFrame(up)
	} else {
		fr = newFeedFrame(bytes.Clone(line))
	}
	switch {
	case r.synced || r.resumed:
		f.publishChange(typ, key, fr)
		if r.synced && rev > f.resume.Rev {
			f.resume.Rev = rev
		}
		r.queued = true
	case typ == protocol.FrameSet:
		r.snapshot[key] = fr
	default:
		delete(r.snapshot, key)
	}
}

// readMarker takes a synced or closing frame; end reports that the stream
// is over: it closed, or its replica has no writer to sync from.
func (f *feed) readMarker(r *streamRead, line []byte) (end bool, err error) {
	var fr frames.Frame[json.RawMessage]
	if err := json.Unmarshal(line, &fr); err != nil {
		f.badFrames.Add(1)
		f.env.Logger.Warn("lockstep: watch frame does not decode", "topic", f.want.Topic, "err", err)
		return false, nil
	}
	if fr.Type == protocol.FrameClosing {
		r.conn.Closed(fr.Reason)
		return true, nil
	}
	live := fr.Writer == nil || *fr.Writer // a server without writer reports has one
	r.conn.LearnWriter(live)
	if !live && f.want.WriterAware && !r.resumed {
		// A replica whose topic has no writer holds no topic, or a
		// stale one: never the cache's truth. Wait for a replica whose
		// writer is attached.
		return true, apierror.Errorf(apierror.CodeUnavailable, "%s at %s has no writer attached", f.want.Topic, r.conn.URL())
	}
	if r.resumed {
		f.resumes.Add(1)
	} else {
		f.publishSnapshot(r.snapshot, fr.Instance)
		r.snapshot = nil
	}
	f.resume = frames.ResumePoint{History: fr.History, Rev: fr.Rev}
	r.synced = true
	return false, nil
}

// lineBuffered reports whether br holds a whole line already read, which
// the next read returns without waiting for the connection.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// convertFrame converts a set frame of an earlier version's form into the
// same frame carrying the object's current form, up converting the
// object; the frame's other members (key, version, revision, header) are
// the server's and stay as they were (the header written again by
// encodeHeader).
func convertFrame(line []byte, up func(object []byte) ([]byte, error), encodeHeader func(map[string]string) []byte) ([]byte, error) {
	head, object, ok := frames.Read(line)
	if !ok {
		var full frames.Frame[json.RawMessage]
		if err := json.Unmarshal(line, &full); err != nil {
			return nil, err
		}
		head = full.Head
		if full.Object != nil {
			object = *full.Object
		}
	}
	if object == nil {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "set frame of %q carries no object", head.Key)
	}
	obj, err := up(object)
	if err != nil {
		return nil, err
	}
	frame, _ := frames.EncodeSet(frames.Change{Key: head.Key, Epoch: head.Epoch, Seq: head.Seq, Rev: head.Rev,
		Header: encodeHeader(head.Header)}, obj)
	return frame, nil
}
