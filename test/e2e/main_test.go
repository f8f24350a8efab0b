// Package e2e holds Shardgate's end-to-end specs: real kube-apiservers and etcd, simulated nodes
// (kwok with kube-scheduler and kube-controller-manager), BIND and external-dns, all on loopback.
// Each spec is a function XSpec(ctx, t, func() XSpecInput) so that the set-up it runs on is
// visible at the call site and a spec can run against other set-ups.
package e2e

import (
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
