package source

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
		return string(appendQuad(make([]byte, 0, len("255.255.255.255")), a.quad))
	}
	return a.text
}

// AppendTo appends the address as spelled to dst.
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

// appendQuad appends the dotted quad of v.
func appendQuad(dst []byte, v uint32) []byte {
	for shift := 24; shift >= 0; shift -= 8 {
		if shift < 24 {
			dst = append(dst, '.')
		}
		switch b := byte(v >> shift); {
		case b >= 100:
			dst = append(dst, '0'+b/100, '0'+b/10%10, '0'+b%10)
		case b >= 10:
			dst = append(dst, '0'+b/10, '0'+b%10)
		default:
			dst = append(dst, '0'+b)
		}
	}
	return dst
}

// quadLen is the length of the dotted quad of v: three dots and one to
// three digits a field.
func quadLen(v uint32) int {
	n := 3
	for shift := 0; shift < 32; shift += 8 {
		n += int(decimalDigits[byte(v>>shift)])
	}
	return n
}

// decimalDigits is the number of decimal digits of each byte value.
var decimalDigits = func() (d [256]uint8) {
	for b := range d {
		switch {
		case b >= 100:
			d[b] = 3
		case b >= 10:
			d[b] = 2
		default:
			d[b] = 1
		}
	}
	return d
}()
