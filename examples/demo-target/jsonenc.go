package main

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Responses are appended to a byte slice by hand rather than through
// encoding/json's reflection: the list response (up to 100 items) is the hot
// path of every soak, and the target's own overhead should stay small next to
// the database work the soak measures. BenchmarkAppendItems compares the two.

// appendItem appends the JSON object of it:
// {"id","bucket","title","owner","payload","created_at","updated_at"}.
func appendItem(b []byte, it *item) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, it.ID, 10)
	b = append(b, `,"bucket":`...)
	b = strconv.AppendInt(b, it.Bucket, 10)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, it.Title)
	b = append(b, `,"owner":`...)
	b = strconv.AppendInt(b, it.Owner, 10)
	b = append(b, `,"payload":`...)
	if len(it.Payload) == 0 {
		b = append(b, `{}`...)
	} else {
		b = append(b, it.Payload...) // valid JSON: validated on the way in, or jsonb's output
	}
	b = append(b, `,"created_at":"`...)
	b = it.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","updated_at":"`...)
	b = it.UpdatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// appendItems appends {"items":[...]}.
func appendItems(b []byte, items []item) []byte {
	b = append(b, `{"items":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, &items[i])
	}
	return append(b, `]}`...)
}

// appendIDs appends {"ids":[...]}.
func appendIDs(b []byte, ids []int64) []byte {
	b = append(b, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, `]}`...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Like encoding/json it escapes
// control characters, U+2028 and U+2029, and replaces invalid UTF-8 with U+FFFD;
// unlike it, it leaves <, > and & alone (responses are not embedded in HTML).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
