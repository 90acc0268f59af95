// Command target is the provision tests' stand-in for a soaked service: a
// static binary that runs as a local process or FROM scratch in a container.
//
// Environment: PORT (default 8080); FAIL_HEALTH=1 makes /health answer 500;
// EXIT_AT_START=N prints a few lines and exits with N; SPAWN_CHILD=1 starts a
// child in a new session (out of the process group) whose PID /child returns;
// FAKE_POSTGRES=1 listens on 5432 and logs PostgreSQL's ready line twice;
// LISTEN_ON_HOSTNAME=1 listens only on the address its hostname resolves to
// (in a container: its bridge address, not its loopback).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	signal.Ignore(syscall.SIGHUP)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-stop; fmt.Println("target: stopping"); os.Exit(0) }()

	if os.Getenv("CHILD_SLEEP") == "1" {
		select {}
	}
	if os.Getenv("FAKE_POSTGRES") == "1" {
		ln, err := net.Listen("tcp", ":5432")
		if err != nil {
			fmt.Println("fatal:", err)
			os.Exit(1)
		}
		fmt.Println("LOG:  database system is ready to accept connections")
		fmt.Println("LOG:  database system is ready to accept connections")
		for {
			c, err := ln.Accept()
			if err == nil {
				c.Close()
			}
		}
	}
	if n := os.Getenv("EXIT_AT_START"); n != "" {
		code, _ := strconv.Atoi(n)
		fmt.Println("target: starting")
		fmt.Fprintln(os.Stderr, "fatal: configured to fail at start")
		os.Exit(code)
	}
	childPID := 0
	if os.Getenv("SPAWN_CHILD") == "1" {
		self, _ := os.Executable()
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), "CHILD_SLEEP=1", "SPAWN_CHILD=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("fatal:", err)
			os.Exit(1)
		}
		childPID = cmd.Process.Pid
		go cmd.Wait()
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("FAIL_HEALTH") == "1" {
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/env/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := os.LookupEnv(r.PathValue("name"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, v)
	})
	mux.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), 3*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c.Close()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/child", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, childPID) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })

	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host := ""
	if os.Getenv("LISTEN_ON_HOSTNAME") == "1" {
		name, _ := os.Hostname()
		addrs, err := net.LookupHost(name)
		if err != nil || len(addrs) == 0 {
			fmt.Println("fatal: resolve hostname:", name, err)
			os.Exit(1)
		}
		host = addrs[0]
	}
	fmt.Println("target: listening on " + net.JoinHostPort(host, port))
	if err := http.ListenAndServe(net.JoinHostPort(host, port), mux); err != nil {
		fmt.Println("fatal:", err)
		os.Exit(1)
	}
}
