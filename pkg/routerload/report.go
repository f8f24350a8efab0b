package routerload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ReportAnnotation holds a router's figures on its Lease (names.RouterLoadLeaseName), as
// "key=value" pairs separated by spaces; the holder is the router's pod.
const ReportAnnotation = "shardgate.io/router-load"

// Report is one router's load over the reporter's window.
type Report struct {
	Pod                                 string
	RequestsPerSecond                   float64
	BytesInPerSecond, BytesOutPerSecond float64
	OpenConnections                     float64
	CPUMillicores, MemoryBytes          float64
	Window                              time.Duration
	// Expires is when the report stops being fresh: stale reports are unknown load, never zero.
	Expires time.Time
	// Clamped names the figures that were absurd and were clamped ("" when none was).
	Clamped string
}

// The keys of ReportAnnotation and the bound of each figure: above it (or negative, or not a
// number) a figure is clamped and the report says so.
var figures = []figure{
	{"rps", 1e7, func(r *Report) *float64 { return &r.RequestsPerSecond }},
	{"in", 1e11, func(r *Report) *float64 { return &r.BytesInPerSecond }},
	{"out", 1e11, func(r *Report) *float64 { return &r.BytesOutPerSecond }},
	{"conns", 1e7, func(r *Report) *float64 { return &r.OpenConnections }},
	{"cpu", 1e6, func(r *Report) *float64 { return &r.CPUMillicores }},
	{"mem", 1e13, func(r *Report) *float64 { return &r.MemoryBytes }},
}

type figure struct {
	key   string
	bound float64
	field func(*Report) *float64
}

// MaxFreshness caps how long a report counts as fresh, whatever its Lease says: a Lease renewed
// "in the future" or for a year would otherwise freeze a shard's load.
const MaxFreshness = time.Minute

// Annotation is r's ReportAnnotation value.
func (r Report) Annotation() string {
	var b strings.Builder
	for i, f := range figures {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", f.key, strconv.FormatFloat(*f.field(&r), 'f', 2, 64))
	}
	fmt.Fprintf(&b, " window=%d", int64(r.Window.Seconds()))
	return b.String()
}

// maxSkew is how far ahead of the seed's clock a renewal may be dated and still count: a node's
// clock a little ahead. Beyond it, a renewal that would never go stale is no report.
const maxSkew = 30 * time.Second

// ParseLease reads a router's report from its Lease at now: false for a Lease without a holder
// that is a pod name, a renewal (or one dated past maxSkew ahead), or a requests figure (a report
// without one is unknown load, not zero). Figures are clamped to their bounds (Clamped says which),
// unknown keys are ignored, and the freshness is capped at MaxFreshness.
func ParseLease(l *coordinationv1.Lease, now time.Time) (Report, bool) {
	s := l.Spec
	value, ok := l.Annotations[ReportAnnotation]
	if !ok || s.HolderIdentity == nil || len(validation.IsDNS1123Subdomain(*s.HolderIdentity)) > 0 || s.RenewTime == nil ||
		s.LeaseDurationSeconds == nil || s.RenewTime.After(now.Add(maxSkew)) {
		return Report{}, false
	}
	renewed := s.RenewTime.Time
	if renewed.After(now) {
		renewed = now
	}
	fresh := min(time.Duration(max(*s.LeaseDurationSeconds, 0))*time.Second, MaxFreshness)
	r := Report{Pod: *s.HolderIdentity, Expires: renewed.Add(fresh)}
	var clamped []string
	seen := map[string]bool{}
	for _, kv := range strings.Fields(value) {
		k, v, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(figures, func(f figure) bool { return f.key == k })
		if i < 0 || seen[k] {
			continue
		}
		seen[k] = true
		x, err := strconv.ParseFloat(v, 64)
		switch f := figures[i]; {
		case (err == nil || errors.Is(err, strconv.ErrRange)) && x > f.bound: // 1e999 overflows to +Inf
			*f.field(&r) = f.bound
			clamped = append(clamped, k)
		case err != nil || math.IsNaN(x) || x < 0:
			clamped = append(clamped, k)
			if k == "rps" {
				return Report{}, false // no requests figure: unknown load, never zero
			}
		default:
			*f.field(&r) = x
		}
	}
	if !seen["rps"] {
		return Report{}, false
	}
	r.Clamped = strings.Join(clamped, ",")
	return r, true
}
