package alerts

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

// TestAttackAlertsPromtool runs attack_alerts.test.yaml (an independent review's cases: each
// says what the alert should do and currently does not) against the rendered rules, the way
// TestChartRulesUnitTests runs alerts.test.yaml.
func TestAttackAlertsPromtool(t *testing.T) { runUnitTests(t, "attack_alerts.test.yaml") }

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
