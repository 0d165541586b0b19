package source

import (
	"strings"
	"testing"
)

func TestQuoteAndTruncate(t *testing.T) {
	long := strings.Repeat("é", MaxQuotedBytes) // 2 bytes each
	for _, tc := range []struct{ name, got, want string }{
		{"short quote", Quote("a\nb"), `"a\nb"`},
		{"quote at the limit", Quote(strings.Repeat("x", MaxQuotedBytes)), `"` + strings.Repeat("x", MaxQuotedBytes) + `"`},
		{"long quote, cut between characters", Quote(long), `"` + strings.Repeat("é", MaxQuotedBytes/2) + `"...`},
		{"long quote, cut backs off a split character", Quote("x" + long), `"x` + strings.Repeat("é", MaxQuotedBytes/2-1) + `"...`},
		{"short truncate", Truncate("abc"), "abc"},
		{"long truncate", Truncate(long + long), strings.Repeat("é", MaxQuotedBytes) + "..."},
		{"prefix of a short string", Prefix("abc", 10), "abc"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
