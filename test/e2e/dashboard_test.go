package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

// metricName finds the metrics a PromQL expression reads (Shardgate's own, controller-runtime's
// and client-go's); histogram series are named by their family.
var metricName = regexp.MustCompile(`\b((?:shardgate|controller_runtime|rest_client|workqueue)_[a-z_]+?)(?:_bucket|_sum|_count)?\b`)

// dashboardMetrics are the metric families the chart's Grafana dashboard queries.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	root, err := framework.RepoRoot()
	must(t, err)
	b, err := os.ReadFile(filepath.Join(root, chart, "dashboards", "shardgate.json"))
	must(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	must(t, json.Unmarshal(b, &d))
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Fatalf("dashboard panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllStringSubmatch(tg.Expr, -1) {
				if !slices.Contains(out, m[1]) {
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}

// checkDashboardMetrics fails unless the controller's /metrics exposes every family the dashboard
// queries that has the prefix (a panel over a metric that does not exist stays empty forever).
func checkDashboardMetrics(t *testing.T, exposition string, prefixes ...string) {
	t.Helper()
	checked := 0
	for _, m := range dashboardMetrics(t) {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(m, p) }) {
			continue
		}
		checked++
		if !strings.Contains(exposition, "\n"+m+"{") && !strings.Contains(exposition, "\n"+m+" ") && !strings.Contains(exposition, "\n"+m+"_bucket{") {
			t.Errorf("the dashboard queries %s, which the controller does not expose", m)
		}
	}
	if checked == 0 {
		t.Errorf("the dashboard queries no metric with prefix %v", prefixes)
	}
}
