package devserver

import "testing"

func TestParseListenAddr(t *testing.T) {
	for _, tt := range []struct {
		addr string
		host string
		port int
		bad  bool
	}{
		{"127.0.0.1:7233", "127.0.0.1", 7233, false},
		{":7233", "0.0.0.0", 7233, false},
		{"localhost:0", "127.0.0.1", 0, false},
		{"example.com:7233", "", 0, true},
		{"127.0.0.1", "", 0, true},
		{"127.0.0.1:70000", "", 0, true},
	} {
		h, p, err := ParseListenAddr(tt.addr)
		if (err != nil) != tt.bad || (!tt.bad && (h != tt.host || p != tt.port)) {
			t.Errorf("ParseListenAddr(%q) = %q, %d, %v", tt.addr, h, p, err)
		}
	}
}
