package dns

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// shardInputs gathers, from the user-cluster cache, what dnsrecords.Desired needs per shard: target nodes
// (HostNetwork: nodes with a ready router pod; NodePort: nodes matching the selector) or the
// LoadBalancer Service's addresses, or a VIP shard's allocated VIPs; and each router Deployment's
// ready replicas for status. recheck is when a router that is ready but not settled (its
// flavour's readiness settle) will be, for a look again then (0: none is).
func shardInputs(ctx context.Context, rd client.Reader, domain string, shards []v1alpha1.ShardSpec, nodes []corev1.Node,
	vips []v1alpha1.ShardVIPs, routedIPs []v1alpha1.RoutedIPRecord, now time.Time) (out []dnsrecords.ShardInput,
	replicas map[string]int32, recheck time.Duration, err error) {
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(names.Namespace),
		client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}); err != nil {
		return nil, nil, 0, err
	}
	replicas = map[string]int32{}
	for _, s := range shards {
		in := dnsrecords.ShardInput{Name: s.Name, Domain: names.ShardDomain(s.Name, domain)}
		key := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(s.Name)}
		d := &appsv1.Deployment{}
		if err := rd.Get(ctx, key, d); err == nil {
			replicas[s.Name] = d.Status.ReadyReplicas
		} else if !apierrors.IsNotFound(err) {
			return nil, nil, 0, err
		}
		switch s.Publishing {
		case v1alpha1.PublishVIP:
			// Addresses that do not depend on nodes: published as a load balancer's are.
			in.LoadBalancer = true
			in.LoadBalancerIPs = dnsrecords.VIPTargets(s.Name, vips)
		case v1alpha1.PublishRoutedIP:
			// The cloud routes the addresses to whichever node holds them: stable targets, once held.
			in.LoadBalancer = true
			in.LoadBalancerIPs = heldRoutedIPs(s, routedIPs)
		case v1alpha1.PublishLoadBalancer:
			in.LoadBalancer = true
			svc := &corev1.Service{}
			if err := rd.Get(ctx, key, svc); err == nil {
				in.LoadBalancerIPs, in.LoadBalancerHostnames = dnsrecords.LoadBalancerTargets(svc)
			} else if !apierrors.IsNotFound(err) {
				return nil, nil, 0, err
			}
		default:
			var wait time.Duration
			in.Nodes, wait = dnsrecords.TargetNodes(s, nodes, pods.Items, routerSettle(s.Flavour), now)
			if wait > 0 && (recheck == 0 || wait < recheck) {
				recheck = wait
			}
			in.RouterNodes = dnsrecords.RouterNodes(s, nodes, pods.Items)
		}
		out = append(out, in)
	}
	return out, replicas, recheck, nil
}

// routerSettle is how long a router of the flavour answers its readiness before it serves its
// routes (render.HTTPGet.Settle); an unknown flavour renders no router, so it has none.
func routerSettle(name v1alpha1.Flavour) time.Duration {
	if f, ok := render.FlavourFor(cmp.Or(name, v1alpha1.FlavourTraefik)); ok {
		return f.Readiness().Settle
	}
	return 0
}

// heldRoutedIPs are the addresses of a RoutedIP shard the cluster holds: admitted for the
// shard's own RoutedIP and assigned to a node by the class (a record with a holder). An address
// the shard merely asks for may be another cluster's, and publishing it would send this
// cluster's names there. A record kept frozen through a class error still has its holder.
func heldRoutedIPs(s v1alpha1.ShardSpec, records []v1alpha1.RoutedIPRecord) []string {
	if s.RoutedIP == nil {
		return nil
	}
	var out []string
	for _, a := range s.RoutedIP.Addresses {
		key := names.Namespace + "/" + names.RoutedIPName(s.Name, a)
		if slices.ContainsFunc(records, func(r v1alpha1.RoutedIPRecord) bool {
			return r.Address == a && r.RoutedIP == key && r.ClassName == s.RoutedIP.ClassName && r.Node != ""
		}) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// heldRoutedIPsKey changes when a shard's published routed IPs may (records and their holders).
func heldRoutedIPsKey(ci *v1alpha1.ClusterIngress) string {
	var b strings.Builder
	for _, r := range ci.Status.RoutedIPs {
		b.WriteString(r.Address + "=" + r.RoutedIP + "@" + r.ClassName + "/" + strconv.FormatBool(r.Node != "") + ";")
	}
	return b.String()
}
