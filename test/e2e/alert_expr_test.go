package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/pkg/kubectlplugin"
	"github.com/shardgate/shardgate/test/framework"
)

// alertCheck evaluates one alert's expression, as the chart renders it, with promtool over real
// scrapes of the controller's /metrics: the first scrape at 0m, the next a minute later, and so
// on. Only the series of one cluster are kept, so other specs' clusters in a shared seed cannot
// change the answer.
type alertCheck struct {
	alert   string
	cluster string
	scrapes []string
}

// sample is one expected element of the expression's result: its labels, as PromQL writes them,
// and its value.
type sample struct {
	Labels string  `json:"labels"`
	Value  float64 `json:"value"`
}

func (a *alertCheck) scrape(t *testing.T, ctl *framework.Controller) {
	t.Helper()
	m, err := ctl.Metrics()
	must(t, err)
	a.scrapes = append(a.scrapes, m)
}

// expect runs promtool: the expression has exactly want[i] at scrape i (none: it is false).
func (a *alertCheck) expect(t *testing.T, want ...[]sample) {
	t.Helper()
	if len(want) != len(a.scrapes) {
		t.Fatalf("%d expectations for %d scrapes", len(want), len(a.scrapes))
	}
	tools, err := framework.LocateTools(framework.ToolHelm, "promtool")
	must(t, err)
	dir := t.TempDir()
	_, groups, err := framework.AlertRules(tools, dir)
	must(t, err)
	rule, ok := framework.Alert(groups, a.alert)
	if !ok {
		t.Fatalf("the chart has no alert %s", a.alert)
	}
	series, err := inputSeries(rule.Expr, a.cluster, a.scrapes)
	must(t, err)
	var evals []map[string]any
	for i, w := range want {
		evals = append(evals, map[string]any{"expr": rule.Expr, "eval_time": fmt.Sprintf("%dm", i), "exp_samples": w})
	}
	b, err := yaml.Marshal(map[string]any{"evaluation_interval": "1m", "tests": []any{map[string]any{
		"interval": "1m", "input_series": series, "promql_expr_test": evals}}})
	must(t, err)
	file := filepath.Join(dir, "expr.test.yaml")
	must(t, os.WriteFile(file, b, 0o644))
	out, err := exec.Command(tools.Path("promtool"), "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("%s over the controller's real metrics (%s):\n%s\nseries: %v", a.alert, rule.Expr, out, series)
	}
	t.Logf("%s's expression over %d real scrapes: as expected", a.alert, len(a.scrapes))
}

// inputSeries turns scrapes into promtool's input series: the families the expression reads,
// the series labelled with the cluster, one value a minute; a series gone from a scrape is stale.
func inputSeries(expr, cluster string, scrapes []string) ([]map[string]string, error) {
	var names []string
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	values := map[string][]string{}
	for i, s := range scrapes {
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(strings.NewReader(s))
		if err != nil {
			return nil, fmt.Errorf("scrape %d: %w", i, err)
		}
		for _, name := range names {
			f := families[name]
			if f == nil {
				continue
			}
			for _, m := range f.GetMetric() {
				id, ok := seriesID(name, m, cluster)
				if !ok {
					continue
				}
				if values[id] == nil {
					values[id] = slices.Repeat([]string{"_"}, len(scrapes))
				}
				values[id][i] = strconv.FormatFloat(sampleValue(m), 'g', -1, 64)
			}
		}
	}
	var out []map[string]string
	for id, v := range values {
		for i := 1; i < len(v); i++ {
			if v[i] == "_" && v[i-1] != "_" && v[i-1] != "stale" {
				v[i] = "stale"
			}
		}
		out = append(out, map[string]string{"series": id, "values": strings.Join(v, " ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["series"] < out[j]["series"] })
	return out, nil
}

func seriesID(name string, m *dto.Metric, cluster string) (string, bool) {
	var labels []string
	mine := false
	for _, l := range m.GetLabel() {
		if l.GetName() == "cluster" && l.GetValue() == cluster {
			mine = true
		}
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return name + "{" + strings.Join(labels, ",") + "}", mine
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// doctor runs `kubectl shardgate doctor CLUSTER -o json` (the built plugin) against the seed, as
// an operator would, and returns the cluster's diagnosis.
func doctor(ctx context.Context, t *testing.T, seed *framework.ControlPlane, cluster string, args ...string) kubectlplugin.Diagnosis {
	t.Helper()
	plugin, err := framework.PluginBinary()
	must(t, err)
	dir := t.TempDir()
	kc, err := seed.WriteKubeconfig(filepath.Join(dir, "seed-operator"), "seed-operator")
	must(t, err)
	out, err := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", kc, "doctor", cluster, "-o", "json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("kubectl shardgate doctor %s: %v", cluster, err)
	}
	var ds []kubectlplugin.Diagnosis
	must(t, json.Unmarshal(out, &ds))
	// What the operator reads, in the test's log.
	human, err := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", kc, "doctor", cluster}, args...)...).Output()
	if err != nil {
		t.Fatalf("kubectl shardgate doctor %s: %v", cluster, err)
	}
	t.Logf("kubectl shardgate doctor %s:\n%s", cluster, human)
	if len(ds) != 1 {
		t.Fatalf("doctor %s: %s", cluster, out)
	}
	return ds[0]
}

// causesOf are the findings' causes and runbooks, in doctor's order.
func causesOf(d kubectlplugin.Diagnosis) string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Cause+" → "+f.Runbook)
	}
	return strings.Join(out, "; ")
}
