// Command longhaul is the one binary: it parses flags and wires the packages
// together. Every command's logic lives in a package with its own tests.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/interop"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/soakworker"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1 // the run failed or was cancelled, or an internal error
	exitBadInput = 2 // bad flags, bad files, unreachable target at start
	exitGate     = 3 // run: completed, but a threshold failed or a finding met --fail-on
	exitWorse    = 3 // compare: completed, --fail-on-worse was given and a metric is worse
)

// badInput marks an error as the user's to fix: exit code 2, one line.
type badInput struct{ err error }

func (b badInput) Error() string { return b.err.Error() }
func (b badInput) Unwrap() error { return b.err }

// badInputf returns a bad-input error.
func badInputf(format string, args ...any) error {
	return badInput{fmt.Errorf(format, args...)}
}

// asBadInput wraps err (if not nil) as bad input.
func asBadInput(err error) error {
	if err == nil {
		return nil
	}
	return badInput{err}
}

// errSilent is returned when the command already printed what went wrong and
// only the exit code remains to be set.
type errSilent struct{ code int }

func (e errSilent) Error() string { return fmt.Sprintf("exit %d", e.code) }

// app carries what every command needs from the outside world, so tests can
// run commands in-process.
type app struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	// interrupts delivers SIGINT/SIGTERM; commands that stop gracefully read it.
	interrupts <-chan os.Signal
}

// untilInterrupted blocks until Ctrl-C (or SIGTERM), or until ctx ends:
// how dev, server, worker and ui serve until stopped.
func (a *app) untilInterrupted(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-a.interrupts:
	}
}

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	a := &app{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv, interrupts: sig}
	os.Exit(a.run(context.Background(), os.Args[1:]))
}

// run executes one command line and returns the process exit code.
func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var silent errSilent
	if errors.As(err, &silent) {
		return silent.code
	}
	var followed follow.Exit
	if errors.As(err, &followed) {
		return followed.Code
	}
	fmt.Fprintln(a.stderr, "longhaul:", err)
	if isBadInput(err) {
		return exitBadInput
	}
	return exitFailed
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "longhaul",
		Short:         "Soak-test orchestrator: find leaks, collapses and regressions that only show after hours of load",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return badInput{suggestFlag(c, err)} })
	root.AddCommand(
		a.driveCmd(),
		a.scenarioCmd(),
		a.runCmd(),
		a.compareCmd(),
		a.listCmd(report.ListComparisons, "  longhaul comparisons\n  longhaul comparisons --status completed --format json\n  longhaul comparisons --schedule nightly-ab", "one comparison object"),
		a.devCmd(),
		a.workerCmd(),
		a.serverCmd(),
		a.healthcheckCmd(),
		a.listCmd(report.ListRuns, "  longhaul runs\n  longhaul runs --status failed --format json\n  longhaul runs --schedule nightly", "one object"),
		a.reportCmd(),
		a.analyzeCmd(),
		a.sweepCmd(),
		a.uiCmd(),
		a.importCmd(),
		a.exportCmd(),
		a.scheduleCmd(),
		a.historyCmd(),
		a.versionCmd(),
		a.profileCmd(),
		a.logsCmd(),
	)
	return root
}

// userErrors are the packages' errors that are the user's to fix (a name,
// file, flag value or address), whichever command returns them: exit 2,
// like badInput.
var userErrors = []error{soakworker.ErrUnusable, driver.ErrInvalid, schedule.ErrNotFound, schedule.ErrExists, schedule.ErrInvalid, interop.ErrBadInput, history.ErrUnknownMetric, report.ErrNoLogs, report.ErrBadLogQuery}

// isBadInput: exit 2.
func isBadInput(err error) bool {
	var bad badInput
	if errors.As(err, &bad) || isCobraUsageError(err) {
		return true
	}
	for _, u := range userErrors {
		if errors.Is(err, u) {
			return true
		}
	}
	return false
}

// isCobraUsageError recognises cobra's own argument errors (unknown command,
// wrong number of args), which it returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// suggestFlag adds the nearest flag of c to an "unknown flag" error: cobra
// suggests commands, pflag no flags.
func suggestFlag(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if best := launch.Nearest(name, names); best != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, best)
	}
	return err
}
