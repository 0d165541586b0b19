package server

import (
	"runtime"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testctx"
)

// TestTranslateCancelledWhileTranslating: a context that ends in the middle
// of the translation (while the output is estimated, or while it is built)
// ends the in-process Translate with Canceled, and the translation stops at
// its next look instead of finishing its 1,000 ExtensionServices. It fails
// if Translate hands the translation any context but the call's.
func TestTranslateCancelledWhileTranslating(t *testing.T) {
	const extensionServices = 1000
	req := &tributaryv1.TranslateRequest{Objects: amplifiedCA(t, 1, extensionServices)}
	// Translate looks twice before translating, the estimate once per
	// ExtensionService, the build once per ExtensionService.
	for _, cancelAt := range []int64{10, 2 + extensionServices + 10} {
		ctx := testctx.NewCancelAfter(t, cancelAt)
		resp, err := NewTranslationService().Translate(ctx, req)
		if status.Code(err) != codes.Canceled || resp != nil {
			t.Errorf("cancelled at look %d: got %d statuses, %v; want code Canceled", cancelAt, len(resp.GetStatuses()), err)
		}
		// After the cancelling look, each build worker looks once more and
		// build once at its end.
		if looks, most := ctx.Looks(), cancelAt+int64(runtime.GOMAXPROCS(0))+1; looks > most {
			t.Errorf("cancelled at look %d: %d looks, want at most %d", cancelAt, looks, most)
		}
	}
}
