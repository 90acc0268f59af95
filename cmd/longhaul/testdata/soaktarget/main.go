// Command soaktarget is the tiny HTTP target of longhaul's soak end-to-end
// tests: GET /items and /health answer 200 with a small JSON body. It listens
// on 127.0.0.1:$PORT (or -addr) and writes its pid to -pidfile if given.
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "", "listen address (default 127.0.0.1:$PORT)")
	pidfile := flag.String("pidfile", "", "write the pid here")
	flag.Parse()
	if *addr == "" {
		*addr = "127.0.0.1:" + os.Getenv("PORT")
	}
	if *pidfile != "" {
		if err := os.WriteFile(*pidfile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	body := []byte(`{"items":[{"id":1,"title":"a"}]}`)
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	// A start-up line: the fault tests find it in the output a crash keeps.
	log.Printf("soaktarget: listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
