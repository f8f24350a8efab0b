// Package routekindstest is a second route kind for tests, a Tunnel shaped like Gateway API's
// HTTPRoute (a list of hostnames, a parent that says whose it is, addresses in status):
// registered only in tests, it shows that the cache, the allocation controller, the admission
// policy and cleanup handle a kind they were not written for.
package routekindstest

import (
	"context"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// GroupVersion of Tunnels. No API server serves it: the tests that use it run on a fake client.
var GroupVersion = schema.GroupVersion{Group: "test.shardgate.io", Version: "v1"}

// Gateway is the parent that makes a Tunnel Shardgate's.
const Gateway = "shardgate"

// Tunnel is a route with hostnames (none asks for one default host) and a parent gateway.
type Tunnel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TunnelSpec   `json:"spec,omitempty"`
	Status            TunnelStatus `json:"status,omitempty"`
}

// TunnelSpec is what its owner asks for.
type TunnelSpec struct {
	Hostnames []string `json:"hostnames,omitempty"`
	// Gateway is whose it is: Gateway for Shardgate's.
	Gateway string `json:"gateway,omitempty"`
}

// TunnelStatus is what the routers that serve it publish: their shard's domain apex.
type TunnelStatus struct {
	Addresses []string `json:"addresses,omitempty"`
}

// TunnelList is a list of Tunnels.
type TunnelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tunnel `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (t *Tunnel) DeepCopyObject() runtime.Object { return t.DeepCopy() }

// DeepCopy copies the Tunnel.
func (t *Tunnel) DeepCopy() *Tunnel {
	out := *t
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Hostnames = slices.Clone(t.Spec.Hostnames)
	out.Status.Addresses = slices.Clone(t.Status.Addresses)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *TunnelList) DeepCopyObject() runtime.Object {
	out := &TunnelList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopy())
	}
	return out
}

// Tunnels is the route kind of Tunnels.
type Tunnels struct{}

var _ routekinds.Kind = Tunnels{}

// Name implements routekinds.Kind.
func (Tunnels) Name() string { return "Tunnel" }

// GroupVersionKind implements routekinds.Kind.
func (Tunnels) GroupVersionKind() schema.GroupVersionKind { return GroupVersion.WithKind("Tunnel") }

// Resource implements routekinds.Kind.
func (Tunnels) Resource() string { return "tunnels" }

// ShortNames implements routekinds.Kind.
func (Tunnels) ShortNames() []string { return []string{"tun"} }

// AddToScheme implements routekinds.Kind.
func (Tunnels) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Tunnel{}, &TunnelList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// New implements routekinds.Kind.
func (Tunnels) New() client.Object { return &Tunnel{} }

// NewList implements routekinds.Kind.
func (Tunnels) NewList() client.ObjectList { return &TunnelList{} }

// Items implements routekinds.Kind.
func (Tunnels) Items(list client.ObjectList) []client.Object {
	l := list.(*TunnelList)
	out := make([]client.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// Cached implements routekinds.Kind: Tunnels alone, trimmed to the allocation annotations.
func (Tunnels) Cached() []routekinds.Cached {
	return []routekinds.Cached{{Object: &Tunnel{}, Transform: func(obj any) (any, error) {
		t, ok := obj.(*Tunnel)
		if !ok {
			return obj, nil
		}
		return &Tunnel{ObjectMeta: watchcache.TrimMeta(t.ObjectMeta, v1alpha1.AllocationAnnotations), Spec: t.Spec, Status: t.Status}, nil
	}}}
}

// Serves implements routekinds.Kind: a Tunnel whose parent is Shardgate's gateway, for the
// routers of the cluster's default class (a Tunnel names no class).
func (Tunnels) Serves(_ context.Context, _ client.Reader, _ *v1alpha1.ClusterIngressSpec, flavours routekinds.Flavours,
) (func(client.Object) (string, bool), error) {
	flavour := flavours.ByIngressClass[flavours.DefaultIngressClass]
	return func(o client.Object) (string, bool) { return flavour, o.(*Tunnel).Spec.Gateway == Gateway }, nil
}

// ServedElsewhere implements routekinds.Kind.
func (Tunnels) ServedElsewhere(o client.Object, _ routekinds.Flavours) string {
	if g := o.(*Tunnel).Spec.Gateway; g != "" && g != Gateway {
		return "its gateway is " + g
	}
	return ""
}

// ClaimBinds implements routekinds.Kind: claims name Ingresses only.
func (Tunnels) ClaimBinds(v1alpha1.ClaimRecord) []string { return nil }

// Refusal implements routekinds.Kind: none.
func (Tunnels) Refusal(client.Object) string { return "" }

// Hosts implements routekinds.Kind.
func (Tunnels) Hosts(o client.Object) []string { return slices.Clone(o.(*Tunnel).Spec.Hostnames) }

// Tell implements routekinds.Kind: a Tunnel without hostnames gets the one it was given.
func (Tunnels) Tell(o client.Object, a allocation.Allocation) (client.Object, bool) {
	t := o.(*Tunnel)
	want := t.DeepCopy()
	allocation.TellMeta(want, a)
	if !a.Rejected && len(want.Spec.Hostnames) == 0 {
		want.Spec.Hostnames = slices.Clone(a.Hosts)
	}
	changed := !maps.Equal(t.Labels, want.Labels) || !maps.Equal(t.Annotations, want.Annotations) ||
		!slices.Equal(t.Spec.Hostnames, want.Spec.Hostnames)
	return want, changed
}

// AlreadySays implements routekinds.Kind.
func (Tunnels) AlreadySays(o client.Object, a allocation.Allocation) bool {
	t := o.(*Tunnel)
	if !allocation.MetaSays(t, a) {
		return false
	}
	if a.Rejected {
		return len(t.Status.Addresses) == 0
	}
	return len(t.Spec.Hostnames) > 0
}

// Spec implements routekinds.Kind.
func (Tunnels) Spec(o client.Object) any { return o.(*Tunnel).Spec }

// TellStatus implements routekinds.Kind: a rejected Tunnel shows no address.
func (t Tunnels) TellStatus(o client.Object, a allocation.Allocation) bool {
	if !a.Rejected || !t.Published(o, nil) {
		return false
	}
	t.Unpublish(o, nil)
	return true
}

// Published implements routekinds.Kind: a Tunnel's routers publish the shard's domain apex.
func (Tunnels) Published(o client.Object, shards []routekinds.Shard) bool {
	addrs := o.(*Tunnel).Status.Addresses
	if shards == nil {
		return len(addrs) > 0
	}
	return slices.ContainsFunc(addrs, func(a string) bool { return isShard(a, shards) })
}

// RouterProblems implements routekinds.Kind: a Tunnel's routers report nothing more.
func (Tunnels) RouterProblems(client.Object, routekinds.Shard) []string { return nil }

// Unpublish implements routekinds.Kind.
func (Tunnels) Unpublish(o client.Object, shards []routekinds.Shard) {
	t := o.(*Tunnel)
	t.Status.Addresses = slices.DeleteFunc(t.Status.Addresses,
		func(a string) bool { return shards == nil || isShard(a, shards) })
	if len(t.Status.Addresses) == 0 {
		t.Status.Addresses = nil
	}
}

func isShard(address string, shards []routekinds.Shard) bool {
	return slices.ContainsFunc(shards, func(s routekinds.Shard) bool { return s.Domain == address })
}

// Released implements routekinds.Kind: the label and annotations are a Tunnel's only marks.
func (Tunnels) Released(o client.Object) (client.Object, bool) {
	if !allocation.CarriesAllocation(o) {
		return nil, false
	}
	want := o.DeepCopyObject().(client.Object)
	allocation.Untell(want)
	return want, true
}

// ReleasedMessage implements routekinds.Kind.
func (Tunnels) ReleasedMessage() string { return "the Tunnel is another gateway's now" }

// Protected implements routekinds.Kind.
func (Tunnels) Protected() []string { return []string{"tunnels", "tunnels/status"} }

// Guards implements routekinds.Kind.
func (Tunnels) Guards() []routekinds.Guard { return nil }

// CanaryRoute implements routekinds.Kind: the Ingress routes every canary.
func (Tunnels) CanaryRoute(routekinds.Canary) client.Object { return nil }
