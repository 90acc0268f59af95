package activities

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// slowCheck is a provisioner whose environment check never answers.
type slowCheck struct{ Provisioner }

func (slowCheck) Check(ctx context.Context, _ Environment) error {
	<-ctx.Done()
	return errors.New(`check env: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.41/containers/x/json": context deadline exceeded`)
}

// TestCheckTimeoutInWords: a check the provider does not answer in time
// reads as that, not as the engine's raw request error.
func TestCheckTimeoutInWords(t *testing.T) {
	a := &Activities{Provisioner: slowCheck{}, CheckTimeout: 50 * time.Millisecond}
	err := a.check(context.Background(), Environment{Provider: "docker"})
	want := "no answer within 50ms from the docker provider; the next window checks again (context deadline exceeded)"
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("check = %v, want %q", err, want)
	}
	if strings.Contains(err.Error(), "docker.sock") {
		t.Errorf("check = %v: the engine's URL is not for the terminal", err)
	}
}

// restartedCheck is a provisioner whose database someone else restarted.
type restartedCheck struct{ Provisioner }

type restartedErr struct{}

func (restartedErr) Error() string {
	return "the database container 0123456789ab was restarted, not by longhaul"
}
func (restartedErr) RestartedElsewhere() bool { return true }

func (restartedCheck) Check(context.Context, Environment) error { return restartedErr{} }

// TestResumeCheckPassesARestartedDatabase: the check of a resuming drive
// takes a database someone else restarted for the whole environment it is
// (were it a failure, the drive would end its incarnation as lost); the
// window's check reports it, for the sink to record and follow.
func TestResumeCheckPassesARestartedDatabase(t *testing.T) {
	a := &Activities{Provisioner: restartedCheck{}}
	if err := a.check(context.Background(), Environment{Provider: "docker"}); err != nil {
		t.Errorf("resume check = %v, want nil: the environment is whole", err)
	}
	var re interface{ RestartedElsewhere() bool }
	if err := a.checkWindow(context.Background(), Environment{Provider: "docker"}); !errors.As(err, &re) {
		t.Errorf("window check = %v, want the restart reported", err)
	}
}
