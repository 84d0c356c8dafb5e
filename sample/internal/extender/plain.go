package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
)

// maxPlainBody bounds a plain request's body, as the lockstep server
// bounds its own.
const maxPlainBody = 4 << 20

type requestKey struct{}

// RequestFromContext returns the plain HTTP request a handler serves, or
// nil for a lockstep call ([framework.CallFromContext] describes those).
func RequestFromContext(ctx context.Context) *http.Request {
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	return r
}

// Handler serves the Kubernetes scheduler extender protocol (1.0.0)
// without a handshake, at prefix + /filter, /prioritize and /bind, as a
// scheduler configuration's urlPrefix names them. Requests are read as
// Kubernetes writes them (Go field names, in any case) and checked
// against the 1.0.0 schemas; answers use the Go field names. It fails
// unless the extender speaks 1.0.0.
func (e *Extender) Handler(prefix string) (http.Handler, error) {
	if !e.SpeaksV1() {
		return nil, errors.New("extender: the Kubernetes protocol is extender 1.0.0: serve it with API v1, or v2 in fork mode")
	}
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		prefix = ""
	}
	s := serverV1{e}
	mux := http.NewServeMux()
	mux.Handle("POST "+prefix+"/filter", plain(extv1.MethodFilter, s.Filter))
	mux.Handle("POST "+prefix+"/prioritize", plain(extv1.MethodPrioritize, s.Prioritize))
	mux.Handle("POST "+prefix+"/bind", plain(extv1.MethodBind, s.Bind))
	return mux, nil
}

// plain serves one method over plain HTTP: decode (any case), validate
// against the 1.0.0 schema, handle, answer.
func plain[Req, Resp any](method string, h func(context.Context, *Req) (*Resp, error)) http.Handler {
	decl, _ := extv1.Contract.Method(method)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPlainBody))
		if err != nil {
			writeError(w, framework.Errorf(framework.CodePayloadTooLarge, "reading the request: %v", err))
			return
		}
		var req Req
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, framework.Errorf(framework.CodeInvalidArgument, "not a valid %s: %v", decl.Request, err))
			return
		}
		// Checked as the lockstep server checks it: by its generated
		// Validate when it has one, else its canonical spelling with
		// jsonschema/v5.
		if v, ok := any(&req).(framework.Validator); ok {
			if err = v.Validate(); err != nil {
				err = framework.NewError(framework.CodeInvalidArgument, err)
			}
		} else {
			var canonical []byte
			if canonical, err = json.Marshal(&req); err == nil {
				err = extv1.Contract.ValidateJSON(decl.Request, canonical)
			}
		}
		if err != nil {
			writeError(w, err)
			return
		}
		resp, err := h(context.WithValue(r.Context(), requestKey{}, r), &req)
		if err != nil {
			writeError(w, err)
			return
		}
		out, err := json.Marshal(resp)
		if err != nil {
			writeError(w, fmt.Errorf("encoding the answer: %w", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// writeError answers with lockstep's error shape and its code's status:
// a Kubernetes scheduler treats any status but 200 as the extender's
// failure.
func writeError(w http.ResponseWriter, err error) {
	fe := (*framework.Error)(nil)
	if !errors.As(err, &fe) {
		fe = framework.NewError(framework.CodeInternal, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(fe.Code().HTTPStatus())
	_ = json.NewEncoder(w).Encode(struct {
		Code    framework.Code  `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details,omitempty"`
	}{fe.Code(), fe.Message(), fe.Details()})
}
