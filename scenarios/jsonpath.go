package scenarios

import "bytes"

// A minimal JSON reader for captures: it finds the value at a dotted path in
// a response body without decoding the rest, and without allocating. It does
// not validate the parts of the document it skips.

// jsonLookup returns the span [start, end) of the value at path in doc.
// A path element selects an object member by key or an array element by
// index ("ids.0").
func jsonLookup(doc []byte, path []pathElem) (start, end int, ok bool) {
	i := skipWS(doc, 0)
	for _, el := range path {
		if i >= len(doc) {
			return 0, 0, false
		}
		switch doc[i] {
		case '{':
			i, ok = findMember(doc, i, el.key)
		case '[':
			if el.index < 0 {
				return 0, 0, false
			}
			i, ok = findElement(doc, i, el.index)
		default:
			return 0, 0, false
		}
		if !ok {
			return 0, 0, false
		}
	}
	end, ok = skipValue(doc, i)
	if !ok {
		return 0, 0, false
	}
	return i, end, true
}

// pathElem is one element of a capture path: an object key, and its value as
// an array index (-1 when it is not a number).
type pathElem struct {
	key   string
	index int
}

func compilePath(dotted string) []pathElem {
	var out []pathElem
	for _, k := range bytes.Split([]byte(dotted), []byte{'.'}) {
		idx := -1
		if len(k) > 0 && len(k) < 10 {
			idx = 0
			for _, c := range k {
				if c < '0' || c > '9' {
					idx = -1
					break
				}
				idx = idx*10 + int(c-'0')
			}
		}
		out = append(out, pathElem{key: string(k), index: idx})
	}
	return out
}

func skipWS(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\n' || doc[i] == '\r' || doc[i] == '\t') {
		i++
	}
	return i
}

// findMember returns the start of the value of member key in the object at i.
func findMember(doc []byte, i int, key string) (int, bool) {
	i = skipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return 0, false
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return 0, false
		}
		kend, ok := skipString(doc, i)
		if !ok {
			return 0, false
		}
		raw := doc[i+1 : kend-1]
		i = skipWS(doc, kend)
		if i >= len(doc) || doc[i] != ':' {
			return 0, false
		}
		i = skipWS(doc, i+1)
		if keyEqual(raw, key) {
			return i, true
		}
		if i, ok = skipItem(doc, i); !ok {
			return 0, false
		}
	}
	return 0, false
}

// keyEqual compares a raw (still escaped) JSON key with key.
func keyEqual(raw []byte, key string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == key
	}
	var buf [64]byte
	u, ok := appendJSONUnescaped(buf[:0], raw)
	return ok && string(u) == key
}

// findElement returns the start of element n of the array at i.
func findElement(doc []byte, i, n int) (int, bool) {
	i = skipWS(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return 0, false
	}
	for k := 0; i < len(doc); k++ {
		if k == n {
			return i, true
		}
		var ok bool
		if i, ok = skipItem(doc, i); !ok {
			return 0, false
		}
	}
	return 0, false
}

// skipItem skips the member value or element at i and the comma after it,
// returning where the next one starts; false at the object's or array's
// end, or on malformed JSON.
func skipItem(doc []byte, i int) (int, bool) {
	end, ok := skipValue(doc, i)
	if !ok {
		return 0, false
	}
	i = skipWS(doc, end)
	if i >= len(doc) || doc[i] != ',' {
		return 0, false
	}
	return skipWS(doc, i+1), true
}

// eachElement calls fn with the span of every element of the array at
// doc[start:end]; it reports false when that is not an array.
func eachElement(doc []byte, start int, fn func(s, e int)) bool {
	if start >= len(doc) || doc[start] != '[' {
		return false
	}
	i := skipWS(doc, start+1)
	if i < len(doc) && doc[i] == ']' {
		return true
	}
	for i < len(doc) {
		end, ok := skipValue(doc, i)
		if !ok {
			return false
		}
		fn(i, end)
		i = skipWS(doc, end)
		if i >= len(doc) {
			return false
		}
		if doc[i] == ']' {
			return true
		}
		if doc[i] != ',' {
			return false
		}
		i = skipWS(doc, i+1)
	}
	return false
}

// skipString returns the index just past the string starting at doc[i] == '"'.
func skipString(doc []byte, i int) (int, bool) {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the value starting at doc[i].
func skipValue(doc []byte, i int) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				end, ok := skipString(doc, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	case ',', '}', ']', ':':
		return 0, false
	}
	j := i
	for j < len(doc) {
		switch doc[j] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			return j, true
		}
		j++
	}
	return j, true
}

// appendJSONValue appends the value doc[start:end] to dst: a string's
// contents unescaped (lit false), anything else as its raw text (lit true).
func appendJSONValue(dst, doc []byte, start, end int) ([]byte, bool, bool) {
	if doc[start] == '"' {
		out, ok := appendJSONUnescaped(dst, doc[start+1:end-1])
		return out, false, ok
	}
	return append(dst, doc[start:end]...), true, true
}
