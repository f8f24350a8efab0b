package routedips

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// claimsOf reads the cluster's RoutedIPs as claims. A RoutedIP is Shardgate's shard claim only
// when the seed's shard spec asks for exactly it (labels in the user cluster are its owner's to
// write, so they prove nothing); its ports are those Shardgate renders for the shard's routers.
// An owner's RoutedIP is served on its Service spec's ports, read from the API server (the cache
// holds only Shardgate's Services) and only where its class exists and takes owners' RoutedIPs
// (the others are refused without ports).
func claimsOf(ctx context.Context, ci *v1alpha1.ClusterIngress, rd client.Reader, rips []v1alpha1.RoutedIP,
	classes map[string]routedip.Class) ([]routedip.Claim, error) {
	shards := map[string]*v1alpha1.RoutedIP{}
	for _, want := range shardRequests(ci) {
		shards[want.Name] = want
	}
	var out []routedip.Claim
	for i := range rips {
		ri := &rips[i]
		if ri.DeletionTimestamp != nil {
			continue
		}
		c := routedip.Claim{Key: ri.Namespace + "/" + ri.Name, Namespace: ri.Namespace, Address: ri.Spec.Address,
			ClassName: ri.Spec.ClassName, ServiceName: ri.Spec.ServiceRef.Name, ServiceNamespace: ri.Spec.ServiceRef.Namespace,
			Created: ri.CreationTimestamp.Time}
		if want := shards[ri.Name]; want != nil && isShardRoutedIP(ri) && equality.Semantic.DeepEqual(want.Spec, ri.Spec) {
			c.Shard, c.Ports = true, shardPorts(ci, want.Labels[v1alpha1.ShardLabel])
		} else if class, ok := classes[ri.Spec.ClassName]; ok && class.AllowOwners {
			ports, err := servicePorts(ctx, rd, ri.Namespace, ri.Spec.ServiceRef.Name)
			if err != nil {
				return nil, err
			}
			c.Ports = ports
		}
		out = append(out, c)
	}
	return out, nil
}

// servicePorts are the ports of the Service's spec (none while it does not exist).
func servicePorts(ctx context.Context, rd client.Reader, namespace, name string) ([]v1alpha1.FirewallPort, error) {
	svc := &corev1.Service{}
	if err := rd.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, clusteraccess.DescribeError("read Service "+namespace+"/"+name, err)
	}
	out := make([]v1alpha1.FirewallPort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		out = append(out, v1alpha1.FirewallPort{Port: p.Port, Protocol: p.Protocol})
	}
	return out, nil
}

// shardPorts are the ports of the router Service Shardgate renders for the shard (its routers
// bind them on the node), of the flavour they run (a held flavour change: the old one).
func shardPorts(ci *v1alpha1.ClusterIngress, shard string) []v1alpha1.FirewallPort {
	for _, s := range ci.Shards() {
		if s.Name != shard || s.Claim != "" {
			continue
		}
		fl, ok := render.FlavourFor(s.Flavour)
		if !ok {
			// A flavour this binary does not render (a downgrade): its routers still run, on the
			// node's ports as every routed-IP router does; closing them would cut them off.
			return []v1alpha1.FirewallPort{{Port: render.HostHTTP, Protocol: corev1.ProtocolTCP},
				{Port: render.HostHTTPS, Protocol: corev1.ProtocolTCP}}
		}
		objs, err := render.RenderShard(fl, render.RenderInput{Domain: names.ShardDomain(s.Name, ci.Status.Domain), Shard: s})
		if err != nil {
			return nil
		}
		for _, o := range objs {
			if o.GetKind() == "Service" && o.GetName() == names.RouterName(s.Name) {
				return portsOfRendered(o)
			}
		}
	}
	return nil
}

func portsOfRendered(o *unstructured.Unstructured) []v1alpha1.FirewallPort {
	ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
	var out []v1alpha1.FirewallPort
	for _, p := range ports {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		port, _, _ := unstructured.NestedInt64(m, "port")
		proto, _, _ := unstructured.NestedString(m, "protocol")
		out = append(out, v1alpha1.FirewallPort{Port: int32(port), Protocol: corev1.Protocol(proto)})
	}
	return out
}
