// Command target is the trivial loopback server that the driver benchmarks
// load: every request gets the same 40-byte JSON body over keep-alive HTTP/1.1.
//
//	go run ./bench/driver/target -addr 127.0.0.1:8099
//
// It prints "listening on ADDR" once it accepts connections, and stops on
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

// body is exactly 40 bytes.
var body = []byte(`{"id":12345,"name":"longhaul","ok":true}`)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("target", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8099", "listen address (loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(body) != 40 {
		return fmt.Errorf("body is %d bytes, want 40", len(body))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{"40"}
		_, _ = w.Write(body)
	})}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
