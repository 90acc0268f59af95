// Command burn is the workload of the docker stats test, built static and
// run FROM scratch: on a line from stdin it touches 32 MiB, burns 0.5 s of
// CPU, prints "done" and sleeps until killed.
package main

import (
	"bufio"
	"fmt"
	"os"
	"syscall"
	"time"
)

var keep []byte

func main() {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return
	}
	keep = make([]byte, 32<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	start := cpu()
	x := 1.0
	for cpu()-start < 500*time.Millisecond {
		for i := 0; i < 100000; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	fmt.Println("done", x > 0, len(keep))
	time.Sleep(time.Hour)
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
