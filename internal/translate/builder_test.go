package translate

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestVersions holds versions, which makes two versions in one allocation,
// to the plain form: each body's xxhash as 16 hex digits, "" for no body.
func TestVersions(t *testing.T) {
	plain := func(body []byte) string {
		if body == nil {
			return ""
		}
		return fmt.Sprintf("%016x", xxhash.Sum64(body))
	}
	bodies := [][]byte{nil, {}, []byte("cluster"), []byte("a ClusterLoadAssignment"), make([]byte, 1000)}
	for _, a := range bodies {
		for _, b := range bodies {
			gotA, gotB := versions(a, b)
			if gotA != plain(a) || gotB != plain(b) {
				t.Errorf("versions(%q, %q) = %q, %q; want %q, %q", a, b, gotA, gotB, plain(a), plain(b))
			}
		}
	}
}
