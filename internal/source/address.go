package source

import (
	"encoding/binary"
	"strconv"
)

// Address is an endpoint's first address as Endpoints hold it: a dotted
// quad (four decimal fields 0-255 without leading zeros, the spelling
// netip.ParseAddr reads as an unzoned IPv4 address, and the only one) as
// its 32 bits, anything else as spelled. Nearly every address is a dotted
// quad; held as four bytes rather than its seven to fifteen, it is smaller
// in memory and read as a number without being parsed again.
//
// A dotted quad has one spelling, so an Address made by MakeAddress or
// QuadAddress is canonical: two are == exactly when their spellings are
// the same. The zero Address is the empty spelling.
type Address struct {
	text   string
	quad   uint32
	isQuad bool
}

// MakeAddress holds text: as a dotted quad when it is one.
func MakeAddress(text string) Address {
	if v, ok := ParseDottedQuad(text); ok {
		return QuadAddress(v)
	}
	return Address{text: text}
}

// QuadAddress is the dotted quad whose 32 bits are v, big-endian.
func QuadAddress(v uint32) Address { return Address{quad: v, isQuad: true} }

// Quad returns a dotted quad's 32 bits, big-endian, and false for any
// other address.
func (a Address) Quad() (uint32, bool) { return a.quad, a.isQuad }

// Equal reports whether a and b are the same address (go-cmp compares
// Addresses with it): they are == exactly then, see Address.
func (a Address) Equal(b Address) bool { return a == b }

// Len is the length of the address as spelled.
func (a Address) Len() int {
	if a.isQuad {
		return quadLen(a.quad)
	}
	return len(a.text)
}

// String is the address as spelled; a dotted quad's is made anew (a caller
// that writes many appends them with AppendTo instead).
func (a Address) String() string {
	if a.isQuad {
		var buf [quadScratch]byte
		return string(buf[:spellQuad(&buf, a.quad)])
	}
	return a.text
}

// AppendTo appends the address as spelled to dst. Unlike append, it may
// change bytes of dst's spare capacity past the ones it appends.
func (a Address) AppendTo(dst []byte) []byte {
	if a.isQuad {
		return appendQuad(dst, a.quad)
	}
	return append(dst, a.text...)
}

// ParseDottedQuad parses s as four decimal fields 0-255 without leading
// zeros, returning the address as big-endian bits. It accepts exactly the
// strings netip.ParseAddr reads as unzoned IPv4 addresses, giving the same
// address, and returns false for everything else (FuzzParseDottedQuad and
// TestParseDottedQuadMatchesNetip hold it to that).
func ParseDottedQuad[T string | []byte](s T) (uint32, bool) {
	var addr uint32
	i := 0
	for field := range 4 {
		if field > 0 {
			if i >= len(s) || s[i] != '.' {
				return 0, false
			}
			i++
		}
		// One to three digits, field by field rather than character by
		// character: fewer branches, and fewer of them mispredicted.
		if i >= len(s) || s[i]-'0' > 9 {
			return 0, false
		}
		v := uint32(s[i] - '0')
		i++
		if i < len(s) && s[i]-'0' <= 9 {
			if v == 0 {
				return 0, false // a leading zero
			}
			v = v*10 + uint32(s[i]-'0')
			i++
			if i < len(s) && s[i]-'0' <= 9 {
				v = v*10 + uint32(s[i]-'0')
				i++
				if v > 255 {
					return 0, false
				}
			}
		}
		addr = addr<<8 | v
	}
	return addr, i == len(s)
}

// appendQuad appends the dotted quad of v. The encoder spells every
// endpoint of every ClusterLoadAssignment this way; digit by digit, with a
// branch on each field's size that random addresses mispredict, and then
// copied from a buffer, it was a seventh of a translation. So each field
// comes from a table as one four-byte store, straight into dst when its
// spare capacity allows (bytes past the quad there may be overwritten, but
// none before it), and through a buffer on the stack near its end.
func appendQuad(dst []byte, v uint32) []byte {
	l := len(dst)
	if cap(dst)-l < quadScratch {
		var buf [quadScratch]byte
		return append(dst, buf[:spellQuad(&buf, v)]...)
	}
	return dst[:l+spellQuad((*[quadScratch]byte)(dst[l:l+quadScratch]), v)]
}

// quadScratch is the room spellQuad writes in: 15 bytes of dotted quad at
// most, and the last field's store is four bytes wide.
const quadScratch = 16

// spellQuad writes the dotted quad of v at the start of out and returns
// its length; it may write past that.
func spellQuad(out *[quadScratch]byte, v uint32) int {
	f := &quadFields[v>>24]
	binary.LittleEndian.PutUint32(out[0:], f.dotted)
	n := int(f.digits) + 1
	f = &quadFields[byte(v>>16)]
	binary.LittleEndian.PutUint32(out[n:], f.dotted)
	n += int(f.digits) + 1
	f = &quadFields[byte(v>>8)]
	binary.LittleEndian.PutUint32(out[n:], f.dotted)
	n += int(f.digits) + 1
	f = &quadFields[byte(v)]
	binary.LittleEndian.PutUint32(out[n:], f.dotted)
	return n + int(f.digits)
}

// quadLen is the length of the dotted quad of v: three dots and one to
// three digits a field.
func quadLen(v uint32) int {
	return 3 + int(quadFields[v>>24].digits+quadFields[byte(v>>16)].digits+quadFields[byte(v>>8)].digits+quadFields[byte(v)].digits)
}

// quadField is one field of a dotted quad: its decimal digits followed by
// a dot, little-endian in dotted (the bytes past them are dots too, and
// are overwritten or left out), and how many digits there are.
type quadField struct {
	dotted uint32
	digits uint8
}

// quadFields spells every byte value as a field.
var quadFields = func() (fields [256]quadField) {
	for b := range fields {
		spelled := []byte(strconv.Itoa(b) + "...")
		fields[b] = quadField{dotted: binary.LittleEndian.Uint32(spelled), digits: uint8(len(strconv.Itoa(b)))}
	}
	return fields
}()
