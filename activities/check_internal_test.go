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
