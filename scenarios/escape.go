package scenarios

import (
	"math/rand/v2"
	"slices"
	"unicode/utf8"
)

// escMode says how a value inserted into a template is escaped for the place
// it goes to.
type escMode uint8

const (
	escNone      escMode = iota // raw body: as is
	escHeader                   // header value: control characters dropped
	escPath                     // path: percent-encoded, "/" and "?" included
	escQuery                    // query key or value: percent-encoded
	escJSONStr                  // inside a JSON string: JSON-escaped
	escJSONValue                // a whole JSON value: literals raw, strings quoted
)

const hexDigits = "0123456789ABCDEF"

// appendValue appends v to dst escaped for esc. lit marks v as the raw text
// of a non-string JSON value (a captured number, say).
func appendValue(dst, v []byte, lit bool, esc escMode) []byte {
	switch esc {
	case escHeader:
		for _, c := range v {
			if (c < ' ' && c != '\t') || c == 0x7f {
				continue
			}
			dst = append(dst, c)
		}
		return dst
	case escPath:
		for _, c := range v {
			if isUnreserved(c) || isPathSafe(c) {
				dst = append(dst, c)
			} else {
				dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			}
		}
		return dst
	case escQuery:
		for _, c := range v {
			if isUnreserved(c) {
				dst = append(dst, c)
			} else {
				dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			}
		}
		return dst
	case escJSONStr:
		return appendJSONStringBody(dst, v)
	case escJSONValue:
		if lit {
			return append(dst, v...)
		}
		dst = append(dst, '"')
		dst = appendJSONStringBody(dst, v)
		return append(dst, '"')
	}
	return append(dst, v...)
}

// isUnreserved reports RFC 3986 unreserved characters.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// isPathSafe reports sub-delimiters and ":" "@", which a path segment may hold.
func isPathSafe(c byte) bool {
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@':
		return true
	}
	return false
}

// escapePathLiteral percent-encodes the bytes of a path template's literal
// text that may not appear in a request line (controls, space, non-ASCII,
// quotes, braces), keeping "/", "?", "&", "=" and existing %XX as written.
func escapePathLiteral(s string) []byte {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}' || c == '#' {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// appendJSONStringBody appends v JSON-escaped, without the quotes.
func appendJSONStringBody(dst, v []byte) []byte {
	for _, c := range v {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= ' ':
			dst = append(dst, c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}

// appendUUID appends a random version-4 UUID drawn from rng.
func appendUUID(dst []byte, rng *rand.Rand) []byte {
	var u [16]byte
	hi, lo := rng.Uint64(), rng.Uint64()
	for i := range 8 {
		u[i] = byte(hi >> (56 - 8*i))
		u[8+i] = byte(lo >> (56 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, "0123456789abcdef"[b>>4], "0123456789abcdef"[b&15])
	}
	return dst
}

// alphanumeric64 maps 6 random bits to a letter or digit: the 62
// alphanumerics plus "a" and "b" once more (a slight bias, irrelevant for
// test data, that saves a division per character).
const alphanumeric64 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"

// appendRandString appends n random alphanumeric characters.
func appendRandString(dst []byte, n int, rng *rand.Rand) []byte {
	dst = slices.Grow(dst, n)
	start := len(dst)
	dst = dst[:start+n]
	out := dst[start:]
	for i := 0; i < len(out); {
		r := rng.Uint64() // 10 characters per draw
		for k := 0; k < 10 && i < len(out); k++ {
			out[i] = alphanumeric64[r&63]
			r >>= 6
			i++
		}
	}
	return dst
}

// appendJSONUnescaped appends the contents of the JSON string raw (without
// its quotes) unescaped; it reports false for a malformed escape.
func appendJSONUnescaped(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(raw) {
			return dst, false
		}
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return dst, false
			}
			i += 4
			if 0xd800 <= r && r < 0xdc00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if r2, ok := hex4(raw, i+3); ok && 0xdc00 <= r2 && r2 < 0xe000 {
					r = (r-0xd800)<<10 + (r2 - 0xdc00) + 0x10000
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
