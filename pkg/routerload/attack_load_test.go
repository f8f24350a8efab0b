package routerload

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// TestAttackLoadHolderIdentityReachesStatusUnbounded: O writes Leases in its shardgate-system.
// A Lease's holderIdentity is any string (the API server checks neither its length nor its
// characters), and a pod name long enough makes names.RouterLoadLeaseName end in a hash, so the
// Lease name still matches. One out-of-bounds figure puts the holder, raw, into
// status.shardLoad[].clamped (and from there the status page and doctor): three such Leases
// carry ~900 KiB and terminal escapes into the seed's status, past its 512 KiB part limit, so
// the whole load part (ShardsSaturated included) is refused. "Nothing it says is repeated".
func TestAttackLoadHolderIdentityReachesStatusUnbounded(t *testing.T) {
	now := time.Unix(100000, 0)
	var objs []coordinationv1.Lease
	for i := range 3 {
		pod := string(rune('a'+i)) + "\x1b]8;;http://evil.example/\x07\x1b[2J" + strings.Repeat("x", 300<<10)
		objs = append(objs, coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace,
			Name: names.RouterLoadLeaseName("default", pod), Labels: names.RouterSelector("default"),
			Annotations: map[string]string{ReportAnnotation: "rps=-1"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(pod), LeaseDurationSeconds: ptr.To[int32](30),
				RenewTime: ptr.To(metav1.NewMicroTime(now))}})
	}
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
	for i := range objs {
		b = b.WithObjects(&objs[i])
	}
	reports, err := Reports(context.Background(), b.Build(), now)
	if err != nil {
		t.Fatal(err)
	}
	got := Observe(Shard{Name: "default", Capacity: 100, SaturationPercent: 80, ReadyRouters: 3, Reports: reports["default"]}, now)
	if len(got.Clamped) > 1024 {
		t.Errorf("status.shardLoad[].clamped is %d bytes of the cluster owner's text", len(got.Clamped))
	}
	if strings.ContainsAny(got.Clamped, "\x1b\x07") {
		t.Errorf("status.shardLoad[].clamped carries terminal control characters from a Lease's holder")
	}
}

// TestAttackLoadFutureRenewalNeverGoesStale: MaxFreshness is said to stop a Lease renewed "in
// the future" from freezing a shard's load, but a future renewTime is taken as renewed now at
// every read, so the report is fresh at every reconcile, forever: a reporter that died on a node
// whose clock runs ahead (or a Lease O writes once) freezes the shard's load and state.
func TestAttackLoadFutureRenewalNeverGoesStale(t *testing.T) {
	written := time.Unix(100000, 0)
	l := lease("router-1", "rps=90", written.Add(365*24*time.Hour), 30)
	for _, later := range []time.Duration{time.Hour, 24 * time.Hour, 30 * 24 * time.Hour} {
		now := written.Add(later)
		r, ok := ParseLease(l, now)
		if ok && r.Expires.After(now) {
			t.Errorf("a Lease written once, %s ago, with a renewTime a year ahead still counts as fresh", later)
		}
	}
}

// TestAttackLoadMissingFiguresAreZeroNotUnknown: a Lease that reports no rps at all (only
// another figure, or rps that is not a number) counts as a fresh report of 0 requests/s, so the
// shard reads Normal at 0% and LeastUtilized sends it every new route: missing load data is taken
// as zero, which the design says it never is.
func TestAttackLoadMissingFiguresAreZeroNotUnknown(t *testing.T) {
	now := time.Unix(100000, 0)
	for _, value := range []string{"mem=1000", "rps=garbage", "rps=NaN"} {
		r, ok := ParseLease(lease("router-1", value, now, 30), now)
		if !ok {
			continue
		}
		got := Observe(Shard{Name: "default", Capacity: 100, SaturationPercent: 80, ReadyRouters: 1, Reports: []Report{r}}, now)
		if got.State != v1alpha1.LoadUnknown {
			t.Errorf("report %q (no usable rps) gives state %s at %d%%, not Unknown", value, got.State, got.UtilizationPercent)
		}
	}
	// A number too large to parse is an absurd figure like any other: clamped to its bound, and said.
	if r, ok := ParseLease(lease("router-1", "rps=1e999", now, 30), now); !ok || r.RequestsPerSecond != 1e7 || r.Clamped != "rps" {
		t.Errorf("rps=1e999: %+v %v", r, ok)
	}
}
