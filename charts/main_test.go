package charts

import (
	"os"
	"testing"
)

// TestMain removes the shared store after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}
