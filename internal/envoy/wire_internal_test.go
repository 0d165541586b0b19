package envoy

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestPutLength: a length written into fewer or more bytes than were set
// aside for it moves what follows, with no spare capacity to move into
// and with bytes before and after it kept.
func TestPutLength(t *testing.T) {
	prefix := []byte("prefix")
	for reserved := 1; reserved <= 3; reserved++ {
		for _, n := range []int{0, 1, 127, 128, 16383, 16384, 20000} {
			t.Run(fmt.Sprintf("reserved=%d/n=%d", reserved, n), func(t *testing.T) {
				payload := make([]byte, n)
				for i := range payload {
					payload[i] = byte(i*7 + 1)
				}
				dst := append(append(slices.Clone(prefix), make([]byte, reserved)...), payload...)
				dst = slices.Clip(dst)
				want := append(protowire.AppendVarint(slices.Clone(prefix), uint64(n)), payload...)
				if got := putLength(dst, len(prefix), reserved); !bytes.Equal(got, want) {
					t.Fatalf("got %d bytes %x..., want %d bytes %x...", len(got), got[:min(len(got), 12)], len(want), want[:min(len(want), 12)])
				}
			})
		}
	}
}
