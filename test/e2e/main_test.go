// Package e2e holds Shardgate's end-to-end specs: real kube-apiservers and etcd, simulated nodes
// (kwok with kube-scheduler and kube-controller-manager), BIND and external-dns, all on loopback.
// Each spec is a function XSpec(ctx, t, func() XSpecInput) so that the set-up it runs on is
// visible at the call site and a spec can run against other set-ups.
//
// Every spec starts an environment of its own, so most run two at a time (t.Parallel, and
// go test's -parallel is the number of CPUs): the package's time is the budget's critical path.
// Those that measure failover or takeover times run alone, before the others start — TestVIP
// (keepalived), TestSharding (replica takeover), TestRoutedIP (address moves), TestCanary (the
// probe interval) — so a busy CPU beside them cannot turn a latency into a failure. TestRoutedIP
// asserts no latency: its flavours run side by side, with each other only.
package e2e

import (
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
