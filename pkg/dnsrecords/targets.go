package dnsrecords

import (
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TargetNodes returns the nodes whose addresses a HostNetwork or NodePort shard publishes:
//   - HostNetwork: nodes running a non-terminating router pod of the shard that has been Ready
//     for settle (its flavour's: a router that answers its readiness before its routes are
//     loaded), and how long until the next router that is Ready but not settled is (0: none);
//   - NodePort: nodes matching the shard's nodeSelector (all nodes when none).
//
// Node health (Ready, schedulable, not being deleted, no NoExecute taint) is applied by the DNS
// planner on top, for every mode alike.
func TargetNodes(s v1alpha1.ShardSpec, nodes []corev1.Node, pods []corev1.Pod, settle time.Duration,
	now time.Time) (out []corev1.Node, recheck time.Duration) {
	switch s.Publishing {
	case v1alpha1.PublishNodePort:
		sel := labels.SelectorFromSet(s.NodeSelector)
		for _, n := range nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				out = append(out, n)
			}
		}
	case v1alpha1.PublishLoadBalancer:
		return nil, 0
	default:
		running := map[string]bool{}
		for i := range pods {
			p := &pods[i]
			if p.Labels[v1alpha1.ShardLabel] != s.Name || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
				continue
			}
			switch wait, ready := readyFor(p, settle, now); {
			case ready && wait == 0:
				running[p.Spec.NodeName] = true
			case ready && (recheck == 0 || wait < recheck):
				recheck = wait
			}
		}
		for _, n := range nodes {
			if running[n.Name] {
				out = append(out, n)
			}
		}
	}
	return out, recheck
}

// RouterNodes returns, for a HostNetwork shard, the nodes running a non-terminating router pod of
// the shard (pending or running), ready or not: where its routers are, so that a node that took
// its router out of DNS (a dead kubelet marks the pod NotReady with the node) is named with why
// (ShardPlan.LeftOut). Other publishing modes have none.
func RouterNodes(s v1alpha1.ShardSpec, nodes []corev1.Node, pods []corev1.Pod) []corev1.Node {
	if s.Publishing != v1alpha1.PublishHostNetwork && s.Publishing != "" {
		return nil
	}
	on := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		// A Failed or Succeeded pod (evicted, shut down with its node) runs nothing there.
		gone := p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
		if p.Labels[v1alpha1.ShardLabel] == s.Name && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && !gone {
			on[p.Spec.NodeName] = true
		}
	}
	var out []corev1.Node
	for _, n := range nodes {
		if on[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// LoadBalancerTargets returns a LoadBalancer Service's published addresses: IPs (A/AAAA) and
// hostnames (CNAME), each sorted.
func LoadBalancerTargets(svc *corev1.Service) (ips, hostnames []string) {
	if svc == nil {
		return nil, nil
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			ips = append(ips, ip.Unmap().String())
		}
		if in.Hostname != "" {
			hostnames = append(hostnames, in.Hostname)
		}
	}
	slices.Sort(ips)
	slices.Sort(hostnames)
	return slices.Compact(ips), slices.Compact(hostnames)
}

// VIPTargets are a VIP shard's allocated VIPs (sorted): its records answer exactly them.
func VIPTargets(shard string, vips []v1alpha1.ShardVIPs) []string {
	var out []string
	for _, v := range vips {
		if v.Shard != shard {
			continue
		}
		for _, a := range v.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				out = append(out, ip.Unmap().String())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readyFor says whether p is Ready and, when it is, how much longer it must stay Ready to have
// been for settle (0: it has). The time it turned Ready is its kubelet's, as for a Deployment's
// minReadySeconds: a clock behind the seed's shortens the wait. A transition stamped in the near
// future (a clock ahead by up to settle) counts as just now, so the wait still ends within twice
// the settle; one further ahead counts as settled, never as a wait that does not end.
func readyFor(p *corev1.Pod, settle time.Duration, now time.Time) (wait time.Duration, ready bool) {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return 0, false
		}
		age := now.Sub(c.LastTransitionTime.Time)
		if age >= settle || -age > settle {
			return 0, true
		}
		return settle - max(age, 0), true
	}
	return 0, false
}
