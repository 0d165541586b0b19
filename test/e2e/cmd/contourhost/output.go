package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
)

// lines writes the host's output protocol: one JSON object per line. The
// cluster sink, the status worker and the start-up code print from
// different goroutines, so every line is written whole under one lock.
type lines struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newLines(w io.Writer) *lines { return &lines{enc: json.NewEncoder(w)} }

// print writes v as one line. A failed write (the parent closed our
// stdout) is logged, not fatal: the adapter must go on serving xDS.
func (l *lines) print(v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.enc.Encode(v); err != nil {
		slog.Warn("contourhost: cannot write to stdout", "error", err)
	}
}
