// Command target is the trivial loopback server that the driver benchmarks
// load: every request gets the same 40-byte JSON body over keep-alive HTTP/1.1.
//
//	go run ./bench/driver/target -addr 127.0.0.1:8099
//
// It prints "listening on ADDR" once it accepts connections, and stops on
// SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/longhaul-dev/longhaul/bench/internal/loopbench"
)

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
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return loopbench.Serve(&http.Server{Handler: http.HandlerFunc(loopbench.ServeBody)}, ln)
}
