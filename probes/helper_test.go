package probes

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes the process-tree tests measure:
// with LONGHAUL_PROBES_HELPER set, TestMain runs one of these modes instead of
// the tests.
const helperEnv = "LONGHAUL_PROBES_HELPER"

// helperBurn is the CPU time each helper process burns.
const helperBurn = 250 * time.Millisecond

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(mode string) {
	switch mode {
	case "burn-exit": // burn, then exit (the parent reaps it: cutime)
		burnCPU(helperBurn)
	case "burn-stay": // burn, say so, then live until killed
		burnCPU(helperBurn)
		fmt.Println("burned")
		time.Sleep(time.Hour)
	case "orphaner": // start a burn-stay grandchild and exit at once: it is reparented
		c := helperCmd("burn-stay")
		c.Stdout = os.Stdout
		if err := c.Start(); err != nil {
			panic(err)
		}
	case "tree":
		// Wait for "go" so that the test's baseline comes first, then burn
		// 4 × helperBurn in four processes of the tree.
		in := bufio.NewReader(os.Stdin)
		if _, err := in.ReadString('\n'); err != nil {
			return
		}
		if err := helperCmd("burn-exit").Run(); err != nil {
			panic(err)
		}
		for _, m := range []string{"burn-stay", "orphaner"} {
			c := helperCmd(m)
			out, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				panic(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if strings.TrimSpace(line) != "burned" {
				panic("helper child said " + line)
			}
			if m == "orphaner" {
				c.Wait()
			}
		}
		burnCPU(helperBurn)
		fmt.Println("done")
		io.Copy(io.Discard, in) // until the test closes stdin
	case "idle": // say so once past execve (running Go code), then live until killed
		fmt.Println("ready")
		time.Sleep(time.Hour)
	default:
		panic("unknown helper mode " + mode)
	}
}

func helperCmd(mode string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	c.Stderr = os.Stderr
	return c
}

// burnCPU spins until this process has used d more CPU time.
func burnCPU(d time.Duration) {
	start := processCPU()
	x := 1.0
	for processCPU()-start < d {
		for i := 0; i < 100000; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	if x == 0 {
		fmt.Println(x)
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startHelperTree starts the "tree" helper as a process-group leader and
// returns it with its stdin (write a line to start burning) and stdout.
// The whole group is killed when the test ends.
func startHelperTree(t testing.TB, mode string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	c := helperCmd(mode)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		// The reparented grandchild is in the group too and died with it.
	})
	return c, in, bufio.NewReader(out)
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
