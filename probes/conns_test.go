package probes

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// A /proc/net/tcp table as Linux prints it: a listener on 127.0.0.1:8080
// (0x1F90), two established connections to it, one it has not closed after
// its client did (CLOSE_WAIT), the client ends of two of them (local port
// ephemeral), and a connection on another port.
const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D432 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F90 0100007F:D433 08 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1005 1 0000000000000000 20 4 30 10 -1
   5: 0100007F:D433 0100007F:1F90 08 00000000:00000000 00:00000000 00000000     0        0 1006 1 0000000000000000 20 4 30 10 -1
   6: 0100007F:1538 0100007F:D440 01 00000000:00000000 00:00000000 00000000     0        0 1007 1 0000000000000000 20 4 30 10 -1
`

const tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:E001 08 00000000:00000000 00:00000000 00000000     0        0 2001 1 0000000000000000 20 4 30 10 -1
`

func TestCountConnections(t *testing.T) {
	c, err := NewConnCounter(8080, func() ([][]byte, error) { return [][]byte{[]byte(tcpTable), []byte(tcp6Table)}, nil })
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if want := (window.Connections{Established: 2, CloseWait: 2}); got != want {
		t.Errorf("got %+v, want %+v (server side only: local port 8080)", got, want)
	}
	bad := "  sl local rem st\n 0: 0100007F:ZZZZ 00000000:0000 01\n"
	c, _ = NewConnCounter(8080, func() ([][]byte, error) { return [][]byte{[]byte(bad)}, nil })
	if _, err := c.Read(); err == nil {
		t.Error("a table with a bad port was read without an error")
	}
	for _, port := range []int{0, 70000} {
		if _, err := NewConnCounter(port, ProcTCPTables(1)); err == nil {
			t.Errorf("port %d accepted", port)
		}
	}
}

// TestConnCounterLive serves on a loopback port in this process, opens
// connections to it, closes the client ends of some while the server keeps
// its ends open, and reads this process's own socket tables: the closed
// ones are CLOSE_WAIT, the others established.
func TestConnCounterLive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open: the server never closes them
		}
	}()
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		defer c.Close()
		s := <-accepted
		defer s.Close()
	}
	for _, c := range clients[:3] {
		c.Close()
	}
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := NewConnCounter(port, ProcTCPTables(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	want := window.Connections{Established: 2, CloseWait: 3}
	var got window.Connections
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = c.Read(); err != nil {
			t.Fatal(err)
		}
		if got == want {
			return
		}
	}
	t.Errorf("port %s: got %+v, want %+v", strconv.Itoa(port), got, want)
}

func TestURLPort(t *testing.T) {
	for in, want := range map[string]int{"http://127.0.0.1:8080": 8080, "http://127.0.0.1/": 80, "https://localhost": 443} {
		if got, err := urlPort(in); err != nil || got != want {
			t.Errorf("urlPort(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ftp://x", "::"} {
		if _, err := urlPort(in); err == nil {
			t.Errorf("urlPort(%q): no error", in)
		}
	}
}
