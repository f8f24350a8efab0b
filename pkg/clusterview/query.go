package clusterview

import (
	"sort"
	"strings"
)

// DefaultPageSize and MaxPageSize bound one page: a seed of 1,000 clusters renders 50 rows by
// default, and no request can ask for more than 500.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// Query selects and pages clusters. The zero value is the first page of all clusters.
type Query struct {
	// Search keeps clusters whose namespace, name, cluster ID, domain or profile contains it.
	Search string
	// Problems keeps only clusters that are not Ready.
	Problems bool
	// Page is 1-based; Size is the page size (0: DefaultPageSize, capped at MaxPageSize).
	Page, Size int
}

// Page is one page of clusters and the counts a page needs to link to the others.
type Page struct {
	Clusters []Cluster `json:"clusters"`
	// Total is the number of clusters; Matching, those the query selects.
	Total    int `json:"total"`
	Matching int `json:"matching"`
	// NotReady counts the clusters that are not Ready, matching or not.
	NotReady int `json:"notReady"`
	Page     int `json:"page"`
	Pages    int `json:"pages"`
	Size     int `json:"pageSize"`
}

// Select filters, sorts (clusters that are not Ready first, then by namespace and name, so the
// first page of a large seed is what needs attention) and cuts out one page.
func Select(all []Cluster, q Query) Page {
	size := q.Size
	switch {
	case size <= 0:
		size = DefaultPageSize
	case size > MaxPageSize:
		size = MaxPageSize
	}
	p := Page{Total: len(all), Size: size}
	search := strings.ToLower(strings.TrimSpace(q.Search))
	var keep []Cluster
	for _, c := range all {
		if !c.Ready.OK() {
			p.NotReady++
		}
		if q.Problems && c.Ready.OK() {
			continue
		}
		if search != "" && !matches(c, search) {
			continue
		}
		keep = append(keep, c)
	}
	sort.SliceStable(keep, func(i, j int) bool {
		a, b := keep[i], keep[j]
		if a.Ready.OK() != b.Ready.OK() {
			return !a.Ready.OK()
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	p.Matching = len(keep)
	p.Pages = (len(keep) + size - 1) / size
	if p.Pages == 0 {
		p.Pages = 1
	}
	p.Page = q.Page
	if p.Page < 1 {
		p.Page = 1
	}
	if p.Page > p.Pages {
		p.Page = p.Pages
	}
	from := (p.Page - 1) * size
	to := min(from+size, len(keep))
	p.Clusters = append([]Cluster{}, keep[from:to]...)
	return p
}

func matches(c Cluster, search string) bool {
	for _, f := range []string{c.Namespace, c.Name, c.ClusterID, c.Domain, c.Profile} {
		if strings.Contains(strings.ToLower(f), search) {
			return true
		}
	}
	return false
}
