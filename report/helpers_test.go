package report

import "github.com/longhaul-dev/longhaul/internal/lockedbuf"

// syncBuffer is a bytes.Buffer safe for one writer goroutine and a reader.
type syncBuffer = lockedbuf.Buffer
