// Package alerts tests the chart's alerting rules as the chart renders them: promtool checks
// them and runs the unit tests of alerts.test.yaml (each alert fires, and a blip does not), and
// each rule keeps the conventions an operator paged at 3 a.m. relies on.
package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/test/framework"
)

const promtool = "promtool"

func rules(t *testing.T) (framework.Tools, string, []framework.RuleGroup) {
	t.Helper()
	tools, err := framework.LocateTools(framework.ToolHelm, promtool)
	if err != nil {
		t.Fatal(err)
	}
	file, groups, err := framework.AlertRules(tools, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tools, file, groups
}

func run(t *testing.T, tools framework.Tools, args ...string) {
	t.Helper()
	out, err := exec.Command(tools.Path(promtool), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", args[0]+" "+args[1], out)
}

func TestChartRulesPassPromtoolCheck(t *testing.T) {
	tools, file, _ := rules(t)
	run(t, tools, "check", "rules", file)
}

// unitTests is alerts.test.yaml as promtool reads it, the parts this test looks at.
type unitTests struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	Tests              []struct {
		Name          string           `json:"name"`
		Interval      string           `json:"interval"`
		InputSeries   []map[string]any `json:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `json:"exp_labels"`
				ExpAnnotations map[string]string `json:"exp_annotations"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestChartRulesUnitTests runs alerts.test.yaml against the rendered rules and fails unless
// every alert is tested both firing and not firing.
func TestChartRulesUnitTests(t *testing.T) {
	groups, fires, silent := runUnitTests(t, "alerts.test.yaml")
	for _, g := range groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("alert %s: tested firing %v, tested not firing %v; alerts.test.yaml needs both", r.Alert,
					fires[r.Alert], silent[r.Alert])
			}
		}
	}
}

// runUnitTests runs a promtool unit-test file of this folder against the rendered rules, once
// each expected alert has its rule's static annotations (description, runbook_url), and says
// which alerts it tested firing and which not firing.
func runUnitTests(t *testing.T, name string) (groups []framework.RuleGroup, fires, silent map[string]bool) {
	t.Helper()
	tools, file, groups := rules(t)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var ut unitTests
	if err := yaml.UnmarshalStrict(b, &ut); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fires, silent = map[string]bool{}, map[string]bool{}
	for i := range ut.Tests {
		for j := range ut.Tests[i].AlertRuleTest {
			at := &ut.Tests[i].AlertRuleTest[j]
			rule, ok := framework.Alert(groups, at.Alertname)
			if !ok {
				t.Fatalf("%q tests alert %s, which the chart does not have", ut.Tests[i].Name, at.Alertname)
			}
			if len(at.ExpAlerts) == 0 {
				silent[at.Alertname] = true
			}
			for k := range at.ExpAlerts {
				fires[at.Alertname] = true
				ea := &at.ExpAlerts[k]
				for _, static := range []string{"description", "runbook_url"} {
					if _, set := ea.ExpAnnotations[static]; !set {
						ea.ExpAnnotations[static] = rule.Annotations[static]
					}
				}
			}
		}
	}
	out, err := yaml.Marshal(ut)
	if err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(filepath.Dir(file), name)
	if err := os.WriteFile(tests, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, tools, "test", "rules", tests)
	return groups, fires, silent
}

// heading is a runbook's Markdown heading; its GitHub anchor is the alert's name in lower case.
var heading = regexp.MustCompile(`(?m)^## (Shardgate[A-Za-z]+)$`)

// metricName finds the metrics an expression reads.
var metricName = regexp.MustCompile(`\b(shardgate_[a-z_]+)\b`)

// TestChartRulesConventions: every alert has a severity, a `for:` of at least a minute, a summary,
// a description and a runbook in docs/runbooks.md; every Shardgate metric it reads is one the
// controller registers.
func TestChartRulesConventions(t *testing.T) {
	_, _, groups := rules(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	runbooks, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range heading.FindAllStringSubmatch(string(runbooks), -1) {
		documented = append(documented, m[1])
	}
	source := controllerSource(t, root)
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			n++
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			if d, err := time.ParseDuration(r.For); err != nil || d < time.Minute {
				t.Errorf("%s: for %q pages on a blip", r.Alert, r.For)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: no summary or description", r.Alert)
			}
			if want := "#" + strings.ToLower(r.Alert); !strings.HasSuffix(r.Annotations["runbook_url"], want) {
				t.Errorf("%s: runbook_url %q, want it to end in %s", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !slices.Contains(documented, r.Alert) {
				t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", r.Alert, r.Alert)
			}
			for _, m := range metricName.FindAllStringSubmatch(r.Expr, -1) {
				if !strings.Contains(source, `"`+m[1]+`"`) {
					t.Errorf("%s reads %s, which the controller does not register", r.Alert, m[1])
				}
			}
		}
	}
	if n < 15 {
		t.Errorf("the chart renders %d alerts", n)
	}
	for _, d := range documented {
		if _, ok := framework.Alert(groups, d); !ok {
			t.Errorf("docs/runbooks.md has a runbook for %s, which the chart does not have", d)
		}
	}
}

// controllerSource is the controller's Go source outside tests, where metric names are registered.
func controllerSource(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			src, err := os.ReadFile(p)
			b.Write(src)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
