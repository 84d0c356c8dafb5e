package framework

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

func TestEveryCodeHasOneStatusAndErrorsKeepTheirCode(t *testing.T) {
	all := []Code{CodeInvalidArgument, CodeUnauthenticated, CodePermissionDenied, CodeNotFound,
		CodeIncompatiblePeer, CodeHandshakeRequired, CodeConflict, CodePayloadTooLarge,
		CodeResourceExhausted, CodeInternal, CodeUnavailable, CodeDeadlineExceeded, CodeCanceled, CodeUnknown}
	assert.Len(t, apierror.Codes(), len(all))
	for _, c := range all {
		assert.True(t, c.Valid())
		assert.NotZero(t, c.HTTPStatus())
	}
	assert.Equal(t, http.StatusInternalServerError, Code("made_up").HTTPStatus())

	base := errors.New("disk on fire")
	e := NewError(CodeUnavailable, base)
	wrapped := fmt.Errorf("while saving: %w", e)
	assert.Equal(t, CodeUnavailable, CodeOf(wrapped))
	assert.ErrorIs(t, wrapped, base)
	assert.Equal(t, CodeInternal, CodeOf(base))
	assert.Equal(t, Code(""), CodeOf(nil))

	w := toWire(Errorf(CodeConflict, "key %s taken", "n1").WithDetails(map[string]string{"owner": "kubelet/a"}))
	back := w.ToError()
	assert.Equal(t, CodeConflict, back.Code())
	assert.Equal(t, "key n1 taken", back.Message())
	assert.JSONEq(t, `{"owner":"kubelet/a"}`, string(back.Details()))
	assert.Equal(t, CodeInternal, wireError{Code: "weird"}.ToError().Code(), "unknown codes from the wire are internal")
}
