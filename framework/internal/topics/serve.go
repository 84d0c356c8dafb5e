package topics

// HTTP serving of topics, once the server has admitted a request:
// client writes and watch streams.

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// topicWriteRequest is the body of POST
// /lockstep/<contract>/<version>/topics/<Topic>: exactly one of set and
// delete. Epoch and seq are the writer's (optional: the server continues
// the writer's current epoch and sequence without them).
type topicWriteRequest struct {
	Epoch  string          `json:"epoch,omitempty"`
	Seq    uint64          `json:"seq,omitempty"`
	Set    json.RawMessage `json:"set,omitempty"`
	Delete *string         `json:"delete,omitempty"`
}

// WriteAnswer is the answer to a topic write: the key, the version
// the server holds for it, and whether this write changed anything.
type WriteAnswer struct {
	Key     string `json:"key"`
	Epoch   string `json:"epoch"`
	Seq     uint64 `json:"seq"`
	Applied bool   `json:"applied"`
}

// ClientWrite decodes, checks and applies one client write, body, by
// writer w, an instance of the writer identity holder (its peer's share
// key); header is the write's header its frames carry. It is the answer
// to POST /lockstep/<contract>/<version>/topics/<Topic> once the server
// has admitted the request.
func (t *Store) ClientWrite(w WriterID, holder string, body, header []byte) (WriteAnswer, error) {
	var req topicWriteRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return WriteAnswer{}, apierror.Errorf(apierror.CodeInvalidArgument, `topic write must be {"set":{…}} or {"delete":"key"}: %v`, err)
	}
	if dec.More() {
		return WriteAnswer{}, apierror.Errorf(apierror.CodeInvalidArgument, "trailing data after the topic write")
	}
	if err := checkEpoch(req.Epoch); err != nil {
		return WriteAnswer{}, err
	}
	hasSet := len(req.Set) > 0 && !bytes.Equal(req.Set, []byte("null"))
	if hasSet == (req.Delete != nil) {
		return WriteAnswer{}, apierror.Errorf(apierror.CodeInvalidArgument, `topic write must hold exactly one of "set" and "delete"`)
	}
	var (
		key     string
		ver     ObjectVersion
		applied bool
		err     error
	)
	if req.Delete != nil {
		key = *req.Delete
		if err := CheckKey(key); err != nil {
			return WriteAnswer{}, err
		}
		ver, applied, err = t.Delete(Write{Writer: w, Epoch: req.Epoch, Seq: req.Seq, Key: key, Header: header})
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Set); err != nil {
			return WriteAnswer{}, apierror.Errorf(apierror.CodeInvalidArgument, "%s is not valid JSON: %v", t.decl.Object, err)
		}
		raw := compact.Bytes()
		if key, err = ObjectKey(raw, t.decl.Key); err != nil {
			return WriteAnswer{}, err
		}
		if err := t.validate(raw); err != nil {
			return WriteAnswer{}, err
		}
		ver, applied, err = t.Set(Write{Writer: w, Holder: holder, Epoch: req.Epoch, Seq: req.Seq, Key: key, Raw: raw, Header: header})
	}
	if err != nil {
		return WriteAnswer{}, err
	}
	return WriteAnswer{Key: key, Epoch: ver.Epoch, Seq: ver.Seq, Applied: applied}, nil
}

// Serve sends the stream's frames as the answer to r, its watch request,
// once the server has admitted it: on HTTP/1.1 on a connection the stream
// takes over from the HTTP server, else through w until the stream or the
// request ends.
func (ws *Stream) Serve(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		// Own the connection: an idle watcher then costs no goroutine and
		// none of the HTTP server's per-connection buffers.
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.SetReadDeadline(time.Time{})
			limitSendBuffer(conn)
			header := hijackedHeader
			if ws.resumed {
				header = hijackedHeaderResumed
			}
			ws.start(connSink{conn}, header)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", protocol.ContentTypeNDJSON)
	h.Set("Cache-Control", "no-store")
	if ws.resumed {
		h.Set(protocol.HeaderResumed, "1")
	}
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ws.start(responseSink{w: w, rc: rc}, nil)
	select {
	case <-ws.finished:
	case <-r.Context().Done():
		ws.closeNow()
		<-ws.finished
	}
}

// hijackedHeader starts the answer of a watch stream that owns its
// connection: the body runs until the connection closes.
var (
	hijackedHeader = []byte("HTTP/1.1 200 OK\r\nContent-Type: " + protocol.ContentTypeNDJSON +
		"\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
	hijackedHeaderResumed = []byte("HTTP/1.1 200 OK\r\nContent-Type: " + protocol.ContentTypeNDJSON +
		"\r\nCache-Control: no-store\r\n" + protocol.HeaderResumed + ": 1\r\nConnection: close\r\n\r\n")
)

// watchSendBuffer is the kernel send buffer of a watch connection. Kept
// small, it makes a watcher that reads slowly push back on its stream
// soon, so the changes it has not read yet wait as one latest change per
// key rather than as every change in a kernel buffer: what it reads next
// is at most this much older than the topic.
const watchSendBuffer = 128 << 10

func limitSendBuffer(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if b, ok := conn.(interface{ SetWriteBuffer(int) error }); ok {
		_ = b.SetWriteBuffer(watchSendBuffer)
	}
}

// ObjectKey returns the value of an object's key field, which must be a
// non-empty string of at most [MaxKeyBytes] bytes.
func ObjectKey(raw []byte, field string) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", apierror.Errorf(apierror.CodeInvalidArgument, "topic object must be a JSON object")
	}
	v, ok := fields[field]
	if !ok {
		return "", apierror.Errorf(apierror.CodeInvalidArgument, "topic object has no key field %q", field)
	}
	var key string
	if err := json.Unmarshal(v, &key); err != nil {
		return "", apierror.Errorf(apierror.CodeInvalidArgument, "key field %q must be a string, not %s", field, v)
	}
	return key, CheckKey(key)
}

// CheckKey checks a key: non-empty, valid UTF-8, at most [MaxKeyBytes]
// bytes; else invalid_argument.
func CheckKey(key string) error {
	switch {
	case key == "":
		return apierror.Errorf(apierror.CodeInvalidArgument, "topic key must not be empty")
	case len(key) > MaxKeyBytes:
		return apierror.Errorf(apierror.CodeInvalidArgument, "topic key of %d bytes exceeds %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return apierror.Errorf(apierror.CodeInvalidArgument, "topic key is not valid UTF-8")
	}
	return nil
}
