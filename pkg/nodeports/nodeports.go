// Package nodeports reads a Kubernetes --service-node-port-range. A user cluster's API server
// does not say which range it serves, so the operator states it, and this is its one parser.
package nodeports

import (
	"fmt"
	"strconv"
	"strings"
)

// Default is Kubernetes' default --service-node-port-range.
const Default = "30000-32767"

// Range is an inclusive range of ports.
type Range struct{ Min, Max int32 }

// Parse parses "min-max" with 1 ≤ min ≤ max ≤ 65535.
func Parse(s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, errA := strconv.ParseUint(lo, 10, 16)
	b, errB := strconv.ParseUint(hi, 10, 16)
	if !ok || errA != nil || errB != nil || a == 0 || a > b {
		return Range{}, fmt.Errorf("%q is not a port range min-max with 1 ≤ min ≤ max ≤ 65535", s)
	}
	return Range{Min: int32(a), Max: int32(b)}, nil
}

// Contains says whether port is in the range.
func (r Range) Contains(port int32) bool { return port >= r.Min && port <= r.Max }
