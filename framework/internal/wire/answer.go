package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// ReadAnswer reads a whole answer of at most limit bytes and closes it:
// a longer one is payload_too_large, never a truncated answer.
func ReadAnswer(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, apierror.Errorf(apierror.CodePayloadTooLarge, "answer of %d bytes exceeds the limit of %d", resp.ContentLength, limit)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, apierror.Errorf(apierror.CodeUnavailable, "reading answer: %v", err)
	}
	if n > limit {
		return nil, apierror.Errorf(apierror.CodePayloadTooLarge, "answer exceeds the limit of %d bytes", limit)
	}
	return buf.Bytes(), nil
}

// DecodeError turns an error answer into an [*apierror.Error]; an answer that is
// not in the lockstep error shape gets a code from its HTTP status.
func DecodeError(resp *http.Response, body []byte) *apierror.Error {
	url := ""
	if resp.Request != nil && resp.Request.URL != nil {
		url = resp.Request.URL.Redacted()
	}
	return DecodeErrorStatus(resp.StatusCode, url, body)
}

// DecodeErrorStatus is [DecodeError] of an answer with status from
// url. An answer that is not in the lockstep error shape comes from a peer
// that does not speak the protocol (a pinned peer, a proxy), which names
// neither itself nor the call: the message names the URL that answered,
// the status, and the start of the body on one line ("http://…/filter
// answered HTTP 500 Internal Server Error: no such pod"), as kube-scheduler
// names the URL of an extender that answered with an error status.
func DecodeErrorStatus(status int, url string, body []byte) *apierror.Error {
	var w apierror.Wire
	if err := json.Unmarshal(body, &w); err == nil && w.Code != "" {
		return w.ToError()
	}
	answered := "HTTP " + strconv.Itoa(status)
	if text := http.StatusText(status); text != "" {
		answered += " " + text
	}
	if url != "" {
		answered = url + " answered " + answered
	}
	// One line: a body indented over several (go-restful's errors) or
	// ending in a newline (http.Error's, encoding/json's) reads as one.
	snippet := strings.Join(strings.Fields(string(body)), " ")
	if len(snippet) > 200 {
		snippet = strings.ToValidUTF8(snippet[:200], "") + "…"
	}
	if snippet == "" {
		return apierror.Errorf(apierror.ForStatus(status), "%s", answered)
	}
	return apierror.Errorf(apierror.ForStatus(status), "%s: %s", answered, snippet)
}
