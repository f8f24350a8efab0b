package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// AlertRelease is the release the chart's alerting rules are rendered for: job shardgate-metrics,
// Deployment shardgate in namespace shardgate-system.
const (
	AlertRelease   = "shardgate"
	AlertNamespace = "shardgate-system"
)

// RuleGroup and Rule are a Prometheus rule file's groups, as the chart's PrometheusRule holds them.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AlertRules renders the chart's PrometheusRule with helm (prometheusRule.enabled) and writes
// its groups into dir as the Prometheus rule file rules.yaml: what promtool checks and tests is
// what the chart installs.
func AlertRules(tools Tools, dir string) (string, []RuleGroup, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", nil, err
	}
	out, err := exec.Command(tools.Path(ToolHelm), "template", AlertRelease, filepath.Join(root, "charts", "shardgate"),
		"--namespace", AlertNamespace, "--set", "dns.zone=clusters.example.test", "--set", "prometheusRule.enabled=true",
		"--set", "metrics.serviceMonitor.enabled=true",
		"--show-only", "templates/prometheusrule.yaml").CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("helm template: %w: %s", err, out)
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []RuleGroup `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(string(out)), "---")), &pr); err != nil {
		return "", nil, fmt.Errorf("the rendered PrometheusRule: %w", err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		return "", nil, fmt.Errorf("helm rendered no PrometheusRule with groups: %.300s", out)
	}
	b, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		return "", nil, err
	}
	file := filepath.Join(dir, "rules.yaml")
	return file, pr.Spec.Groups, os.WriteFile(file, b, 0o644)
}

// Alert finds an alerting rule by name.
func Alert(groups []RuleGroup, name string) (Rule, bool) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r, true
			}
		}
	}
	return Rule{}, false
}
