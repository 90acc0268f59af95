package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// dirLock is an exclusive flock on DataDir/temporal.lock, held while a
// server runs, so that two processes never serve the same database file.
// The kernel drops it when the process dies, even on kill -9.
type dirLock struct {
	f    *os.File
	once sync.Once
}

func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, "temporal.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another longhaul process serves %s: stop it, or use its address with --temporal", dir)
		}
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	})
}
