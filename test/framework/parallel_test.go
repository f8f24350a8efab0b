package framework

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A task's Fatal ends that task only: the others run to their end, and the test fails once, with
// every failed task's message.
func TestInParallelCollectsFailures(t *testing.T) {
	s := NewSession("parallel", &strings.Builder{})
	var finished, afterFatal atomic.Bool
	var fatal *SessionFatal
	func() {
		defer func() {
			r := recover()
			if f, ok := r.(*SessionFatal); ok {
				fatal = f
				return
			}
			if r != nil {
				panic(r)
			}
		}()
		inParallel(s,
			task{"broken", func(t testing.TB) {
				t.Fatalf("no %s", "etcd")
				afterFatal.Store(true)
			}},
			task{"slow", func(testing.TB) {
				time.Sleep(50 * time.Millisecond)
				finished.Store(true)
			}},
			task{"skipped", func(t testing.TB) { t.Skip("no kubelet") }})
	}()
	if fatal == nil {
		t.Fatal("inParallel did not fail the session")
	}
	for _, want := range []string{"broken: no etcd", "skipped: skipped: no kubelet"} {
		if !strings.Contains(fatal.Msg, want) {
			t.Errorf("message %q lacks %q", fatal.Msg, want)
		}
	}
	if !finished.Load() {
		t.Error("a task's Fatal cut the other tasks short")
	}
	if afterFatal.Load() {
		t.Error("a task went on after its Fatal")
	}
	if !s.Failed() {
		t.Error("the session is not marked failed")
	}
}

// Every task runs at once, and each one's time is reported under its name.
func TestInParallelRunsTogether(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	wait := func(testing.TB) {
		if started.Add(1) == 2 {
			close(release)
		}
		select {
		case <-release:
		case <-time.After(5 * time.Second):
			t.Error(errors.New("the tasks ran one after another"))
		}
	}
	took := inParallel(t, task{"a", wait}, task{"b", wait})
	if len(took) != 2 || took["a"] <= 0 || took["b"] <= 0 {
		t.Errorf("took = %v, want both tasks timed", took)
	}
	if got := tookLine(took, "b", "a", "c"); !strings.HasPrefix(got, "b ") || !strings.Contains(got, ", a ") {
		t.Errorf("tookLine = %q, want b then a, and no c", got)
	}
}
