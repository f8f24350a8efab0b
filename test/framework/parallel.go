package framework

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// task is one part of a start-up that may run beside the others.
type task struct {
	name string
	run  func(t testing.TB)
}

// inParallel runs each task in a goroutine of its own and waits for all of them. A task that
// calls Fatal ends only itself (testing.T's FailNow belongs to the test's goroutine, and the
// demo's Session panics, which no goroutine but the command's may do); once every task has
// ended, t fails with all of their messages. It returns how long each task took, by name.
func inParallel(t testing.TB, tasks ...task) map[string]time.Duration {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		took     = map[string]time.Duration{}
	)
	for _, tk := range tasks {
		wg.Go(func() {
			start := time.Now()
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				took[tk.name] = time.Since(start)
			}()
			tk.run(&taskTB{TB: t, fail: func(msg string) {
				mu.Lock()
				defer mu.Unlock()
				failures = append(failures, tk.name+": "+msg)
			}})
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatal(strings.Join(failures, "\n"))
	}
	return took
}

// taskTB is the testing.TB a task sees: its own Fatal ends its goroutine (runtime.Goexit runs
// its deferred calls, as FailNow does) after handing the message to inParallel. Everything else
// (Cleanup, Logf, Failed, ...) goes to the test's TB, which is safe for concurrent use.
type taskTB struct {
	testing.TB
	fail func(msg string)
}

func (s *taskTB) Fatal(args ...any)                 { s.stop(fmt.Sprint(args...)) }
func (s *taskTB) Fatalf(format string, args ...any) { s.stop(fmt.Sprintf(format, args...)) }
func (s *taskTB) FailNow()                          { s.stop("failed") }
func (s *taskTB) Skip(args ...any)                  { s.stop("skipped: " + fmt.Sprint(args...)) }
func (s *taskTB) SkipNow()                          { s.stop("skipped") }
func (s *taskTB) Skipf(format string, args ...any) {
	s.stop("skipped: " + fmt.Sprintf(format, args...))
}

func (s *taskTB) stop(msg string) {
	s.fail(msg)
	runtime.Goexit()
}

// tookLine says how long each task took, in the order given, for the log.
func tookLine(took map[string]time.Duration, names ...string) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		if d, ok := took[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1fs", n, d.Seconds()))
		}
	}
	return strings.Join(parts, ", ")
}
