package dnsrecords

import (
	"fmt"
	"testing"
)

func TestShare(t *testing.T) {
	for _, tt := range []struct {
		shares int
		want   string
	}{{0, "0"}, {1, "0"}, {-3, "0"}} {
		if got := Share("default", "u1", tt.shares); got != tt.want {
			t.Errorf("Share(u1, %d) = %s, want %s", tt.shares, got, tt.want)
		}
	}
	const n = 2000
	for _, shares := range []int{2, 4, 8} {
		count := map[string]int{}
		moved := 0
		for i := range n {
			name := fmt.Sprintf("u%d", i)
			s := Share("default", name, shares)
			if Share("default", name, shares) != s {
				t.Fatalf("Share(%s, %d) is not stable", name, shares)
			}
			count[s]++
			if next := Share("default", name, shares+1); next != s {
				moved++
				if next != fmt.Sprint(shares) {
					t.Errorf("going from %d to %d shares moved %s from share %s to %s, not to the new share", shares, shares+1,
						name, s, next)
				}
			}
		}
		if len(count) != shares {
			t.Errorf("%d shares: endpoints went to %d of them: %v", shares, len(count), count)
		}
		for s, c := range count {
			if c < n/shares*7/10 || c > n/shares*13/10 {
				t.Errorf("%d shares: share %s holds %d of %d endpoints, not about %d", shares, s, c, n, n/shares)
			}
		}
		// Only the endpoints the new share wins move: about 1/(shares+1).
		if moved > n/(shares+1)*13/10 || moved < n/(shares+1)*7/10 {
			t.Errorf("going from %d to %d shares moved %d of %d endpoints, want about %d", shares, shares+1, moved, n, n/(shares+1))
		}
	}
}
