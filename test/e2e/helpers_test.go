package e2e

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// eventually polls cond until it holds or timeout passes, then fails t with cond's last message.
func eventually(ctx context.Context, t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		var ok bool
		ok, msg = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// update reads obj afresh by its key, applies change and writes it back, again on a conflict:
// the controllers write the same objects (labels, annotations, status), so a test's read-modify-
// write can lose the race to them.
func update[T client.Object](ctx context.Context, t testing.TB, c client.Client, obj T, change func(T)) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(ctx, obj)
	}))
}

// updateProfile changes the seed's IngressProfile name with update.
func updateProfile(ctx context.Context, t testing.TB, seed *framework.ControlPlane, name string,
	change func(*v1alpha1.IngressProfile)) {
	t.Helper()
	update(ctx, t, seed.Client, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}, change)
}

// waitAnswer waits up to a minute for BIND's A answer for name. external-dns polls every second,
// but a cluster's first records wait for its engagement and its routers, and on a loaded 2-core
// machine (CI of 9ffb605: caches synced in 15 s, nodes up in 62 s) that took more than 30 s.
func waitAnswer(ctx context.Context, t testing.TB, s *framework.DNSServer, name string, want func(framework.Answer) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	a, err := s.WaitForAnswer(ctx, name, dns.TypeA, want)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s after %s", name, a, time.Since(start).Round(10*time.Millisecond))
}

// syscallStop and syscallCont freeze and resume a process (a router that hangs without exiting).
func syscallStop(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }
func syscallCont(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }

// freeze stops every process of procs (SIGSTOP) and returns resume, which continues them once;
// what is still frozen when t ends is resumed then.
func freeze(t testing.TB, procs []framework.ProcessIdentity) (resume func()) {
	t.Helper()
	for _, p := range procs {
		must(t, syscallStop(p.PID))
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, p := range procs {
				_ = syscallCont(p.PID)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// loop calls try every interval until the returned stop is called, which reports how many
// requests were sent and how many failed. try says whether it sent one (a client that could not
// resolve the name sends none) and whether it failed; failures after stop are not counted.
func loop(ctx context.Context, every time.Duration, try func(ctx context.Context, i int) (sent, failed bool)) func() (int, int) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan [2]int)
	go func() {
		var n, failed int
		for i := 0; ctx.Err() == nil; i++ {
			sent, bad := try(ctx, i)
			if sent {
				n++
				if bad && ctx.Err() == nil {
					failed++
				}
			}
			time.Sleep(every)
		}
		done <- [2]int{n, failed}
	}()
	return func() (int, int) {
		cancel()
		r := <-done
		return r[0], r[1]
	}
}
