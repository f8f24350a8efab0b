package clusterview

import (
	"fmt"
	"testing"
)

func fleet(n int, notReady map[int]bool) []Cluster {
	var all []Cluster
	for i := range n {
		c := Cluster{Namespace: fmt.Sprintf("ns-%03d", i), Name: "c", ClusterID: fmt.Sprintf("id%03d", i), Domain: fmt.Sprintf("id%03d.example.test", i)}
		c.Ready.Status = "True"
		if notReady[i] {
			c.Ready.Status = "False"
		}
		all = append(all, c)
	}
	return all
}

func TestSelect(t *testing.T) {
	all := fleet(120, map[int]bool{7: true, 99: true})
	for _, tc := range []struct {
		name                             string
		q                                Query
		wantLen, wantMatching, wantPages int
		wantPage                         int
		wantFirst                        string
	}{
		{"first page, problems first", Query{}, 50, 120, 3, 1, "ns-007"},
		{"last page is short", Query{Page: 3}, 20, 120, 3, 3, "ns-100"},
		{"past the end is the last page", Query{Page: 9}, 20, 120, 3, 3, "ns-100"},
		{"page below one is the first", Query{Page: -2}, 50, 120, 3, 1, "ns-007"},
		{"problems only", Query{Problems: true}, 2, 2, 1, 1, "ns-007"},
		{"search by domain, any case", Query{Search: "ID05"}, 10, 10, 1, 1, "ns-050"},
		{"search finds nothing", Query{Search: "nope"}, 0, 0, 1, 1, ""},
		{"page size capped", Query{Size: 10000}, 120, 120, 1, 1, "ns-007"},
		{"small pages", Query{Size: 7, Page: 2}, 7, 120, 18, 2, "ns-005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Select(all, tc.q)
			if len(p.Clusters) != tc.wantLen || p.Matching != tc.wantMatching || p.Pages != tc.wantPages || p.Page != tc.wantPage {
				t.Fatalf("len %d matching %d pages %d page %d", len(p.Clusters), p.Matching, p.Pages, p.Page)
			}
			if p.Total != 120 || p.NotReady != 2 {
				t.Fatalf("total %d notReady %d", p.Total, p.NotReady)
			}
			first := ""
			if len(p.Clusters) > 0 {
				first = p.Clusters[0].Namespace
			}
			if first != tc.wantFirst {
				t.Fatalf("first %q, want %q", first, tc.wantFirst)
			}
		})
	}
}
