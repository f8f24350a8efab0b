package routerload

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func lease(holder, value string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "load-a-pod-" + holder,
		Annotations: map[string]string{ReportAnnotation: value}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
			RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	return l
}

func TestReportRoundTrip(t *testing.T) {
	now := time.Unix(5000, 0)
	in := Report{RequestsPerSecond: 12.5, BytesInPerSecond: 100, BytesOutPerSecond: 2000, OpenConnections: 3,
		CPUMillicores: 150, MemoryBytes: 4e7, Window: 30 * time.Second}
	got, ok := ParseLease(lease("router-1", in.Annotation(), now, 30), now)
	in.Pod, in.Expires, in.Window = "router-1", now.Add(30*time.Second), 0
	if !ok || got != in {
		t.Errorf("got %+v %v, want %+v", got, ok, in)
	}
}

// TestParseLeaseIsHostile: a report is the user cluster owner's to write. Absurd figures are
// clamped and said; freshness is capped, whatever the Lease claims; a Lease without a holder,
// renewal or figures is no report.
func TestParseLeaseIsHostile(t *testing.T) {
	now := time.Unix(5000, 0)
	tests := []struct {
		name    string
		l       *coordinationv1.Lease
		ok      bool
		rps     float64
		clamped string
		expires time.Time
	}{
		{"huge", lease("p", "rps=1e300 conns=-5 mem=NaN cpu=abc in=1e999", now, 30), true, 1e7, "rps,conns,mem,cpu,in",
			now.Add(30 * time.Second)},
		{"renewed a little ahead (a node's clock)", lease("p", "rps=1", now.Add(10*time.Second), 30), true, 1, "",
			now.Add(30 * time.Second)},
		{"renewed a day ahead: never stale, no report", lease("p", "rps=1", now.Add(24*time.Hour), 30), false, 0, "", time.Time{}},
		{"holder not a pod name", lease("a b\x1b", "rps=1", now, 30), false, 0, "", time.Time{}},
		{"no requests figure", lease("p", "mem=1", now, 30), false, 0, "", time.Time{}},
		{"fresh for a year", lease("p", "rps=1", now, 365*24*3600), true, 1, "", now.Add(MaxFreshness)},
		{"negative duration", lease("p", "rps=1", now, -10), true, 1, "", now},
		{"repeated key counts once", lease("p", "rps=1 rps=1e9", now, 30), true, 1, "", now.Add(30 * time.Second)},
		{"no figures", lease("p", "hello=1", now, 30), false, 0, "", time.Time{}},
		{"no holder", lease("", "rps=1", now, 30), false, 0, "", time.Time{}},
	}
	for _, tt := range tests {
		r, ok := ParseLease(tt.l, now)
		if ok != tt.ok || r.RequestsPerSecond != tt.rps || r.Clamped != tt.clamped || (ok && !r.Expires.Equal(tt.expires)) {
			t.Errorf("%s: got %+v %v", tt.name, r, ok)
		}
	}
	noAnnotation := lease("p", "", now, 30)
	noAnnotation.Annotations = nil
	if _, ok := ParseLease(noAnnotation, now); ok {
		t.Error("a Lease without the annotation is a report")
	}
	if a := (Report{RequestsPerSecond: 1}).Annotation(); !strings.Contains(a, "rps=1.00") {
		t.Errorf("annotation %q", a)
	}
}
