package kubectlplugin

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Diagnosis is what `kubectl shardgate doctor` says of one cluster: what is wrong, causes first.
type Diagnosis struct {
	Cluster  string    `json:"cluster"`
	Domain   string    `json:"domain,omitempty"`
	Ready    bool      `json:"ready"`
	Findings []Finding `json:"findings"`
}

// Finding is one thing wrong, with the next step and the runbook that says more.
type Finding struct {
	Severity string `json:"severity"`
	// Cause is what Shardgate reports: a condition with its status and reason, or a check of
	// doctor's own (DNSAnswer).
	Cause   string `json:"cause"`
	Message string `json:"message,omitempty"`
	Next    string `json:"next"`
	// Runbook is the section of docs/runbooks.md (the alert that fires for it).
	Runbook string `json:"runbook,omitempty"`
}

const (
	severityCritical = "critical"
	severityWarning  = "warning"
	// expiryWarning: cert-manager renews a third of the way before expiry, so a certificate this
	// close to it is one whose renewal has failed (ShardgateCertificateExpiringSoon).
	expiryWarning = 14 * 24 * time.Hour
)

// step is the next step for a condition that is not what it should be, from docs/runbooks.md.
type step struct {
	severity, next, runbook string
}

// steps: for each condition, in the order causes come (the source before reachability, reachability
// before the shards, the shards before DNS, DNS before certificates and the canary), the next
// step by reason; "" is any other reason. A reason with no step is no problem (provisioning,
// a move in progress).
var steps = []struct {
	condition string
	byReason  map[string]step
}{
	{v1alpha1.ConditionSourceAvailable, map[string]step{
		"": {severityCritical, "restore the cluster's Cluster or kubeconfig Secret before the grace period ends, " +
			"or the cluster's records and routers are removed", ""}}},
	{v1alpha1.ConditionDomainAssigned, map[string]step{
		"": {severityCritical, "give the cluster a free, valid cluster ID (annotation shardgate.io/cluster-id) " +
			"or fix the profile's zone; the message names the holder", ""}}},
	{v1alpha1.ConditionClusterReachable, map[string]step{
		v1alpha1.ReasonControlPlaneNotReady: {},
		v1alpha1.ReasonConnecting:           {},
		v1alpha1.ReasonCredentialsRefused: {severityWarning, "renew the kubeconfig Secret: its token or certificate " +
			"expired or was revoked", "ShardgateClusterUnreachable"},
		v1alpha1.ReasonKubeconfigMissing: {severityWarning, "restore the kubeconfig Secret", "ShardgateClusterUnreachable"},
		v1alpha1.ReasonKubeconfigInvalid: {severityWarning, "fix the kubeconfig Secret's value key", "ShardgateClusterUnreachable"},
		v1alpha1.ReasonObjectBudgetExceeded: {severityWarning, "the cluster holds more objects of a kind than " +
			"--max-objects-per-kind (the message names it): raise the budget if the cluster is that large; it is " +
			"read again after a back-off", "ShardgateClusterUnreachable"},
		v1alpha1.ReasonServerError: {severityWarning, "the API server answers, but refuses Shardgate's requests " +
			"(the message says how): check the kubeconfig's rights and the server's own health", "ShardgateClusterUnreachable"},
		"": {severityWarning, "check that the cluster's API server is up and reachable from the seed; its DNS " +
			"records are kept meanwhile", "ShardgateClusterUnreachable"}}},
	{v1alpha1.ConditionShardsAvailable, map[string]step{
		v1alpha1.ReasonNoNodeMatchesSelector: {severityCritical, "label or add ingress nodes for the shard",
			"ShardgateShardsUnavailable"},
		v1alpha1.ReasonPodsUnschedulable: {severityCritical, "free resources or fix taints on the shard's nodes " +
			"(kubectl -n shardgate-system describe pods in the user cluster)", "ShardgateShardsUnavailable"},
		v1alpha1.ReasonNoRouterReady: {severityCritical, "look at the shard's router pods and their logs in the user " +
			"cluster (kubectl -n shardgate-system get pods -l shardgate.io/shard=SHARD)", "ShardgateShardsUnavailable"},
		"": {severityCritical, "read the message: fix the profile, the router role or the apply error it names",
			"ShardgateShardsUnavailable"}}},
	{v1alpha1.ConditionVIPsAvailable, map[string]step{
		v1alpha1.ReasonVIPsNotHeld: {severityCritical, "check the shard's routers are ready and VRRP (IP protocol 112) " +
			"passes between its nodes", "ShardgateVIPNotHeld"},
		v1alpha1.ReasonDuplicateHolder: {severityCritical, "restore VRRP between the nodes, or stop one VIP agent; " +
			"check nothing else announces the address", "ShardgateVIPHeldTwice"},
		"": {severityWarning, "fix or widen the profile's VIP pool, or free the address", "ShardgateVIPsUnavailable"}}},
	{v1alpha1.ConditionRoutedIPsAssigned, map[string]step{
		v1alpha1.ReasonRoutedIPMoving: {},
		v1alpha1.ReasonMoveFailed: {severityCritical, "read the failed updateRoutedIP Job's log; fix the class's cloud " +
			"credentials or quota (the Job is retried)", "ShardgateRoutedIPMoveFailing"},
		"": {severityWarning, "make a node eligible, or fix the class or the RoutedIP", "ShardgateRoutedIPsNotAssigned"}}},
	{v1alpha1.ConditionDNSPublished, map[string]step{
		v1alpha1.ReasonPublished: {},
		v1alpha1.ReasonStaleRecordsKept: {severityWarning, "make the cluster reachable (above): its records still name " +
			"the nodes seen last", "ShardgateClusterRecordsStale"},
		v1alpha1.ReasonKeptLastTargets: {severityCritical, "no ingress node is ready: the records keep the last ones; " +
			"see the shards (above) and the user cluster's nodes", "ShardgateShardsUnavailable"},
		v1alpha1.ReasonPropagating: {severityWarning, "check external-dns (its log, its shares) and the DNS provider",
			"ShardgateDNSNotAnswered"},
		v1alpha1.ReasonDNSWriteFailed: {severityCritical, "check the DNSEndpoint CRD and the seed's admission policies",
			"ShardgateDNSWriteFailing"},
		v1alpha1.ReasonNoReadyNodes: {severityCritical, "no ingress node has ever been ready, so the cluster has no " +
			"records: see the shards (above) and the user cluster's nodes", "ShardgateShardsUnavailable"},
		v1alpha1.ReasonUnreachable: {severityWarning, "the cluster was never read, so it has no records yet: make it " +
			"reachable (above)", "ShardgateClusterUnreachable"},
		v1alpha1.ReasonConnecting: {},
		"":                        {severityCritical, "read the message (the domain, the zone or the profile)", ""}}},
	{v1alpha1.ConditionCertificateReady, map[string]step{
		v1alpha1.ReasonCertificateIssued:  {},
		v1alpha1.ReasonCertificateIssuing: {},
		v1alpha1.ReasonIssuanceQueued: {severityWarning, "wait for the seed's ACME budget (the message says when), or " +
			"raise tls.newOrdersPerWeek within the ACME server's limits", "ShardgateCertificateIssuanceQueued"},
		"": {severityWarning, "fix the issuer, or the DNS-01 challenge's record; the routers keep the last certificate",
			"ShardgateCertificateIssuanceFailing"}}},
	{v1alpha1.ConditionRoutesProtected, map[string]step{
		"": {severityWarning, "the admission policy guarding Shardgate's marks is not installed: routes are still " +
			"served, but tenants may set the marks; upgrade the cluster to Kubernetes 1.30 or later", ""}}},
}

// canarySteps: the next step for a shard whose canary fails, by reason. A shard without a ready
// router was not requested (ShardsAvailable, or for a claimed shard its claim, says so first),
// nor one whose names are not out yet.
var canarySteps = map[string]step{
	v1alpha1.ReasonNoRouterReady: {},
	v1alpha1.ReasonCanaryPending: {},
	v1alpha1.ReasonAddressRefused: {severityWarning, "the canary refuses the shard's node addresses: list their " +
		"range in canary.allowCIDRs (private ranges) or out of canary.refuseCIDRs", ""},
	"": {severityCritical, "check the shard's routers (a wedged one: restart its pod) and the path from " +
		"the seed to its nodes", "ShardgateCanaryFailing"},
}

// Diagnose walks a cluster's status, causes first; answers are the DNS answers doctor got for a
// name under each shard domain (a shard without one was not looked up).
func Diagnose(ci *v1alpha1.ClusterIngress, now time.Time, answers map[string]DNSAnswer) Diagnosis {
	d := Diagnosis{Cluster: ci.Namespace + "/" + ci.Name, Domain: ci.Status.Domain,
		Ready: meta.IsStatusConditionTrue(ci.Status.Conditions, v1alpha1.ConditionReady)}
	for _, s := range steps {
		if f, ok := conditionFinding(ci, s.condition, s.byReason); ok {
			d.Findings = append(d.Findings, f)
		}
		switch s.condition {
		case v1alpha1.ConditionShardsAvailable:
			d.Findings = append(d.Findings, routerFindings(ci)...)
			d.Findings = append(d.Findings, claimFindings(ci)...)
			d.Findings = append(d.Findings, leftOutFindings(ci)...)
		case v1alpha1.ConditionDNSPublished:
			d.Findings = append(d.Findings, dnsFindings(ci, answers)...)
		case v1alpha1.ConditionCertificateReady:
			if f, ok := expiring(ci, now); ok {
				d.Findings = append(d.Findings, f)
			}
		}
	}
	for _, c := range ci.Status.Canaries {
		sc := meta.FindStatusCondition(c.Conditions, v1alpha1.ConditionRoutesServing)
		if sc == nil || sc.Status == metav1.ConditionTrue {
			continue
		}
		st := stepFor(canarySteps, sc.Reason)
		if st.next == "" {
			continue
		}
		d.Findings = append(d.Findings, Finding{Severity: st.severity, Next: st.next, Runbook: st.runbook,
			Message: sc.Message, Cause: fmt.Sprintf("shard %s: RoutesServing=%s/%s", c.Shard, sc.Status, sc.Reason)})
	}
	d.Findings = append(d.Findings, loadFindings(ci)...)
	d.Findings = append(d.Findings, flavourChangeFindings(ci)...)
	if !d.Ready && !slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return f.Severity == severityCritical ||
			strings.Contains(readyMessage(ci), strings.SplitN(f.Cause, "=", 2)[0])
	}) {
		if r := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); r != nil {
			d.Findings = append(d.Findings, Finding{Severity: severityWarning, Cause: "Ready=" + string(r.Status) + "/" + r.Reason,
				Message: r.Message, Next: "read the message; the controller's log says more"})
		}
	}
	return d
}

// stepFor is the step for reason, else the steps' catch-all ("").
func stepFor(byReason map[string]step, reason string) step {
	if st, ok := byReason[reason]; ok {
		return st
	}
	return byReason[""]
}

func readyMessage(ci *v1alpha1.ClusterIngress) string {
	if r := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); r != nil {
		return r.Reason + " " + r.Message
	}
	return ""
}

// conditionFinding is the finding of one condition that is not what it should be, with the next
// step for its reason; none for a reason with no step (in progress), for Unknown (not known to
// be wrong while the cluster cannot be read: that cause comes first) and for True
// (but DNSPublished, whose True reasons include records kept).
func conditionFinding(ci *v1alpha1.ClusterIngress, typ string, byReason map[string]step) (Finding, bool) {
	c := meta.FindStatusCondition(ci.Status.Conditions, typ)
	unreachable := !meta.IsStatusConditionTrue(ci.Status.Conditions, v1alpha1.ConditionClusterReachable)
	if c == nil || (c.Status == metav1.ConditionUnknown && unreachable) ||
		(c.Status == metav1.ConditionTrue && typ != v1alpha1.ConditionDNSPublished) {
		return Finding{}, false
	}
	st := stepFor(byReason, c.Reason)
	if st.next == "" {
		return Finding{}, false
	}
	return Finding{Severity: st.severity, Message: c.Message, Next: withShard(st.next, c.Message), Runbook: st.runbook,
		Cause: fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)}, true
}

// withShard puts the shards a ShardsAvailable message names ("<shard>: why; <shard>: why") in
// place of SHARD in a next step, so the command can be pasted; a message naming none leaves it.
func withShard(next, message string) string {
	if !strings.Contains(next, "SHARD") {
		return next
	}
	// Only the profile's shards: the claimed ones the message names after them are tenants'.
	message, _, _ = strings.Cut(message, v1alpha1.ClaimedShardsWithoutRouters)
	var shards []string
	for _, part := range strings.Split(message, "; ") {
		name, _, found := strings.Cut(part, ":")
		if found && len(validation.IsDNS1123Label(name)) == 0 && !slices.Contains(shards, name) {
			shards = append(shards, name)
		}
	}
	switch len(shards) {
	case 0:
		return next
	case 1:
		return strings.ReplaceAll(next, "SHARD", shards[0])
	}
	selector := "'shardgate.io/shard in (" + strings.Join(shards, ",") + ")'"
	return strings.ReplaceAll(next, "shardgate.io/shard=SHARD", selector)
}

// routerFindings: shards with some but not all of their routers ready (none ready is
// ShardsAvailable's). A router that is not ready has left its shard's DNS answer: a wedged one,
// or one on a node being drained.
func routerFindings(ci *v1alpha1.ClusterIngress) []Finding {
	ready := map[string]v1alpha1.ShardStatus{}
	for _, sh := range ci.Status.Shards {
		ready[sh.Name] = sh
	}
	var out []Finding
	for _, sh := range ci.Shards() {
		st, seen := ready[sh.Name]
		if !seen || sh.Replicas == nil || st.ReadyReplicas == 0 || st.ReadyReplicas >= *sh.Replicas {
			continue
		}
		out = append(out, Finding{Severity: severityWarning, Cause: "shard " + sh.Name + ": routers not ready",
			Message: fmt.Sprintf("%d of %d routers ready (on %s); the others have left the shard's DNS answer",
				st.ReadyReplicas, *sh.Replicas, strings.Join(st.ReadyNodes, ", ")),
			Next: "look at the shard's router pods that are not ready in the user cluster " +
				"(kubectl -n shardgate-system get pods -l shardgate.io/shard=" + sh.Name + " -o wide): a wedged " +
				"router, or its node cordoned or not ready", Runbook: "ShardgateShardsUnavailable"})
	}
	return out
}

// leftOutSteps: what a node left out of a shard's DNS answer means, and the next step.
var leftOutSteps = map[v1alpha1.NodeLeftOutReason]struct{ what, next string }{
	v1alpha1.NodeCordoned: {"cordoned", "when the nodes' maintenance is over, uncordon them in the user cluster " +
		"(kubectl uncordon NODES); to retire one, drain it (kubectl drain NODE --ignore-daemonsets) and its routers move"},
	v1alpha1.NodeNotReady: {"not ready", "check the nodes' kubelet and network in the user cluster " +
		"(kubectl describe node NODES); routers move off a node once it is evicted"},
	v1alpha1.NodeDeleting: {"being deleted", "nothing, if they are meant to go: their routers move; else see what " +
		"deletes them"},
	v1alpha1.NodeNoExecuteTaint: {"tainted NoExecute", "remove the taint when its cause is gone " +
		"(kubectl describe node NODES shows it)"},
	v1alpha1.NodeNotSelected: {"not selected as ingress nodes, yet running the shard's routers", "label the nodes " +
		"to match the profile's dns.ingressNodeSelector, or keep the shard's routers off them (its nodeSelector)"},
	v1alpha1.NodeNoAddress: {"without an address of the profile's types", "give the nodes an address of a type " +
		"in the profile's dns.addressTypes"},
}

// leftOutFindings: nodes that run or could carry a shard's routers but are out of its DNS answer
// (a cordon, a taint, a sick node), one finding per shard and reason, with the nodes named. A
// NodePort shard spans nodes the profile does not select for ingress by design: those are no
// finding.
func leftOutFindings(ci *v1alpha1.ClusterIngress) []Finding {
	nodePort := map[string]bool{}
	for _, s := range ci.Shards() {
		nodePort[s.Name] = s.Publishing == v1alpha1.PublishNodePort
	}
	var out []Finding
	for _, sh := range ci.Status.Shards {
		by := map[v1alpha1.NodeLeftOutReason][]string{}
		var order []v1alpha1.NodeLeftOutReason
		for _, n := range sh.NodesLeftOut {
			if n.Reason == v1alpha1.NodeNotSelected && nodePort[sh.Name] {
				continue
			}
			if _, seen := by[n.Reason]; !seen {
				order = append(order, n.Reason)
			}
			by[n.Reason] = append(by[n.Reason], n.Name)
		}
		answer := "it answers nothing"
		switch {
		case len(sh.ReadyNodes) > 0:
			answer = "it answers " + strings.Join(sh.ReadyNodes, ", ")
		case len(sh.Targets) > 0:
			answer = "its records keep their last targets, " + strings.Join(sh.Targets, ", ")
		}
		if more := int(sh.NodesLeftOutCount) - len(sh.NodesLeftOut); more > 0 {
			answer += fmt.Sprintf("; %d more nodes are left out, not listed", more)
		}
		for _, why := range order {
			st, ok := leftOutSteps[why]
			if !ok {
				st.what, st.next = string(why), "read the nodes' status in the user cluster"
			}
			nodes := strings.Join(by[why], ", ")
			next := strings.ReplaceAll(st.next, "NODES", strings.Join(by[why], " "))
			out = append(out, Finding{Severity: severityWarning,
				Cause:   fmt.Sprintf("shard %s: node %s %s", sh.Name, nodes, st.what),
				Message: fmt.Sprintf("%s left the shard's DNS answer (%s); %s", nodes, why, answer),
				Next:    strings.ReplaceAll(next, "NODE", by[why][0]), Runbook: "ShardgateShardsUnavailable"})
		}
	}
	return out
}

// claimFindings: tenants' claimed shards without a ready router. They never make the cluster
// unavailable (ShardsAvailable judges the profile's shards), but their routers are built from the
// profile's claims settings, so the operator may be the one to fix them.
func claimFindings(ci *v1alpha1.ClusterIngress) []Finding {
	var out []Finding
	for _, c := range ci.Status.Claims {
		if c.Shard == "" || c.Reason != v1alpha1.ReasonClaimProvisioning {
			continue
		}
		out = append(out, Finding{Severity: severityWarning,
			Cause:   fmt.Sprintf("claim %s/%s: shard %s has no ready router", c.Namespace, c.Name, c.Shard),
			Message: c.Message,
			Next: "look at the claimed shard's router pods in the user cluster (kubectl -n shardgate-system describe pods " +
				"-l shardgate.io/shard=" + c.Shard + "); if every claim is so, fix the profile's claims settings " +
				"(nodeSelector, image, publishing); else tell the claim's owner"})
	}
	return out
}

// loadFindings: a saturated shard (ShardsSaturated True: the routers still serve, with less
// headroom), and reports whose figures were clamped (someone writes Leases in the user cluster's
// shardgate-system besides the reporters).
func loadFindings(ci *v1alpha1.ClusterIngress) []Finding {
	var out []Finding
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionShardsSaturated); c != nil &&
		c.Status == metav1.ConditionTrue {
		out = append(out, Finding{Severity: severityWarning, Cause: "ShardsSaturated=True/" + c.Reason, Message: c.Message,
			Next: "add routers (the shard's replicas, with nodes for them) or a shard for new routes to go to; with " +
				"LeastUtilized new routes already avoid it", Runbook: "ShardgateShardSaturated"})
	}
	for _, l := range ci.Status.ShardLoad {
		if l.Clamped != "" {
			out = append(out, Finding{Severity: severityWarning, Cause: "shard " + l.Shard + ": load reports clamped",
				Message: l.Clamped, Next: "find who writes the shard's load Leases in the user cluster besides its routers' " +
					"reporters (kubectl -n shardgate-system get leases -l shardgate.io/shard=" + l.Shard + ")",
				Runbook: "ShardgateShardSaturated"})
		}
	}
	return out
}

// flavourChangeFindings: a shard's flavour change the profile asks for that waits (the shard keeps
// serving with its old routers; the operator asked for something not yet done).
func flavourChangeFindings(ci *v1alpha1.ClusterIngress) []Finding {
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return []Finding{{Severity: severityWarning, Cause: "FlavourChangesHeld=True/" + c.Reason, Message: c.Message,
		Next: "move, fix or delete the routes it names (kubectl shardgate explain ingress/NAME -n NAMESPACE says why " +
			"each one would be refused), or set the shard's flavour back in the profile"}}
}

// DNSAnswer is what a name under a shard domain resolved to. Unasked: doctor could not get an
// answer (the server did not answer in time): no verdict on the zone.
type DNSAnswer struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses,omitempty"`
	Error     string   `json:"error,omitempty"`
	Unasked   bool     `json:"unasked,omitempty"`
}

// dnsFindings compares each shard's answer with the targets Shardgate published for it. A shard
// published as a CNAME (a load balancer's hostname) resolves to addresses doctor cannot compare
// with it: it is left to the DNS controller's own verification.
func dnsFindings(ci *v1alpha1.ClusterIngress, answers map[string]DNSAnswer) []Finding {
	var out []Finding
	for _, sh := range ci.Status.Shards {
		a, ok := answers[sh.Name]
		if !ok || len(sh.Targets) == 0 || slices.ContainsFunc(sh.Targets, isHostname) {
			continue
		}
		want := slices.Sorted(slices.Values(sh.Targets))
		got := slices.Sorted(slices.Values(a.Addresses))
		switch {
		case a.Unasked:
			out = append(out, Finding{Severity: severityWarning, Cause: "DNSAnswer: shard " + sh.Name + " not asked",
				Message: fmt.Sprintf("no answer for %s from the DNS server doctor asked (%s)", a.Name, a.Error),
				Next:    "check --dns-server (one of the zone's authoritative servers) and ask again"})
		case a.Error != "":
			out = append(out, Finding{Severity: severityCritical, Cause: "DNSAnswer: shard " + sh.Name,
				Message: fmt.Sprintf("%s does not resolve (%s); published: %s", a.Name, a.Error, strings.Join(want, ", ")),
				Next:    "check external-dns and the zone's delegation to its servers", Runbook: "ShardgateDNSNotAnswered"})
		case !slices.Equal(want, got):
			out = append(out, Finding{Severity: severityWarning, Cause: "DNSAnswer: shard " + sh.Name,
				Message: fmt.Sprintf("%s answers %s; published: %s", a.Name, strings.Join(got, ", "), strings.Join(want, ", ")),
				Next:    "wait a TTL; if it stays, check external-dns and the DNS provider", Runbook: "ShardgateDNSNotAnswered"})
		}
	}
	return out
}

func isHostname(target string) bool {
	_, err := netip.ParseAddr(target)
	return err != nil
}

// expiring: an expired certificate, or one late for renewal as ShardgateCertificateExpiringSoon
// judges it (within 14 days and under a quarter of its lifetime left: a 7-day certificate with
// 3 days left is on schedule).
func expiring(ci *v1alpha1.ClusterIngress, now time.Time) (Finding, bool) {
	c := ci.Status.Certificate
	if c == nil || c.NotAfter == nil {
		return Finding{}, false
	}
	left := c.NotAfter.Sub(now)
	if left <= 0 {
		return Finding{Severity: severityCritical, Cause: "Certificate expired",
			Message: fmt.Sprintf("certificate %s expired %s", c.SerialNumber, c.NotAfter.UTC().Format(time.RFC3339)),
			Next:    "fix issuance (see the certificate's condition); HTTPS fails until a new one is served",
			Runbook: "ShardgateCertificateExpired"}, true
	}
	late := left < expiryWarning
	if c.NotBefore != nil {
		late = late && left < c.NotAfter.Sub(c.NotBefore.Time)/4
	}
	if !late {
		return Finding{}, false
	}
	return Finding{Severity: severityWarning, Cause: "Certificate expiry",
		Message: fmt.Sprintf("certificate %s expires %s (in %s)", c.SerialNumber, c.NotAfter.UTC().Format(time.RFC3339),
			left.Round(time.Hour)),
		Next: "renewal is late: see the certificate's condition", Runbook: "ShardgateCertificateExpiringSoon"}, true
}
