package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/test/framework"
)

// TestAttackAlertsPromtool runs attack_alerts.test.yaml (an independent review's cases: each
// says what the alert should do and currently does not) against the rendered rules, the way
// TestChartRulesUnitTests runs alerts.test.yaml.
func TestAttackAlertsPromtool(t *testing.T) {
	tools, file, groups := rules(t)
	b, err := os.ReadFile("attack_alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ut unitTests
	if err := yaml.UnmarshalStrict(b, &ut); err != nil {
		t.Fatalf("attack_alerts.test.yaml: %v", err)
	}
	for i := range ut.Tests {
		for j := range ut.Tests[i].AlertRuleTest {
			at := &ut.Tests[i].AlertRuleTest[j]
			rule, ok := framework.Alert(groups, at.Alertname)
			if !ok {
				t.Fatalf("no alert %s", at.Alertname)
			}
			for k := range at.ExpAlerts {
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
	tests := filepath.Join(filepath.Dir(file), "attack_alerts.test.yaml")
	if err := os.WriteFile(tests, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, tools, "test", "rules", tests)
}

// TestAttackAlertsRuleWithoutServiceMonitor: prometheusRule.enabled renders ShardgateControllerDown
// as absent(up{job="<fullname>-metrics"} == 1), a job only the chart's ServiceMonitor makes; but
// metrics.serviceMonitor.enabled defaults to false and nothing ties the two. An operator who
// enables the rules and scrapes the controller their own way (or forgets the ServiceMonitor) gets
// a critical ShardgateControllerDown that never clears, and the 3 a.m. page means nothing. The
// chart should refuse the combination (or the rule should not name a job it does not create).
func TestAttackAlertsRuleWithoutServiceMonitor(t *testing.T) {
	tools, err := framework.LocateTools(framework.ToolHelm)
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tools.Path(framework.ToolHelm), "template", "sg", filepath.Join(root, "charts", "shardgate"),
		"--namespace", "x", "--set", "dns.zone=z.test", "--set", "prometheusRule.enabled=true").CombinedOutput()
	if err != nil {
		return // refused: fine
	}
	s := string(out)
	if strings.Contains(s, "ShardgateControllerDown") && strings.Contains(s, `job="sg-shardgate-metrics"`) &&
		!strings.Contains(s, "kind: ServiceMonitor") {
		t.Error("the chart renders ShardgateControllerDown on job sg-shardgate-metrics without the ServiceMonitor that makes that job: it fires forever")
	}
}
