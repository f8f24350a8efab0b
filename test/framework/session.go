package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
)

// Session lets a command (the demo) use the harness outside `go test`: it is the testing.TB the
// Start* functions take. Cleanups run in reverse order on Close; Fatal ends the session by
// panicking with a *SessionFatal, which the command recovers to Close and exit.
type Session struct {
	// testing.TB is never called: every method of the interface is implemented below; embedding
	// it only provides the interface's unexported method.
	testing.TB

	name string
	log  io.Writer
	ctx  context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	closed   bool
}

// SessionFatal is what Fatal panics with.
type SessionFatal struct{ Msg string }

func (f *SessionFatal) Error() string { return f.Msg }

// NewSession logs to log (the harness's own messages; the components log to their files).
func NewSession(name string, log io.Writer) *Session {
	ctx, stop := context.WithCancel(context.Background())
	return &Session{name: name, log: log, ctx: ctx, stop: stop}
}

// Close runs the cleanups, newest first, once.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	s.stop()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}

func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *Session) Error(args ...any) { s.Log(args...); s.Fail() }
func (s *Session) Errorf(format string, args ...any) {
	s.Logf(format, args...)
	s.Fail()
}
func (s *Session) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}
func (s *Session) FailNow() { s.Fail(); panic(&SessionFatal{Msg: "failed"}) }
func (s *Session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
func (s *Session) Fatal(args ...any) { s.Fail(); panic(&SessionFatal{Msg: fmt.Sprint(args...)}) }
func (s *Session) Fatalf(format string, args ...any) {
	s.Fail()
	panic(&SessionFatal{Msg: fmt.Sprintf(format, args...)})
}
func (s *Session) Helper()                          {}
func (s *Session) Log(args ...any)                  { fmt.Fprintln(s.log, args...) }
func (s *Session) Logf(format string, args ...any)  { fmt.Fprintf(s.log, format+"\n", args...) }
func (s *Session) Name() string                     { return s.name }
func (s *Session) Setenv(key, value string)         { _ = os.Setenv(key, value) }
func (s *Session) Chdir(dir string)                 { _ = os.Chdir(dir) }
func (s *Session) Skip(args ...any)                 { s.Fatal(args...) }
func (s *Session) SkipNow()                         { s.Fatal("skipped") }
func (s *Session) Skipf(format string, args ...any) { s.Fatalf(format, args...) }
func (s *Session) Skipped() bool                    { return false }
func (s *Session) Context() context.Context         { return s.ctx }
func (s *Session) Output() io.Writer                { return s.log }
func (s *Session) Attr(string, string)              {}
func (s *Session) ArtifactDir() string              { return s.TempDir() }
func (s *Session) TempDir() string {
	dir, err := RunDir()
	if err != nil {
		s.Fatalf("run dir: %v", err)
	}
	d, err := os.MkdirTemp(dir, "tmp-")
	if err != nil {
		s.Fatalf("temp dir: %v", err)
	}
	return d
}
