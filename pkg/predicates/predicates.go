// Package predicates holds the watch filters the controllers share: each controller is woken only
// by the ClusterIngress changes it decides from, never by the others' status writes.
package predicates

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// MetadataOrSpecChanged passes updates that change the spec (generation), deletion, finalizers
// or annotations. Status writes pass only through another predicate.
var MetadataOrSpecChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
	},
}

// DomainChanged passes ClusterIngress updates that change status.domain (the domain the shard
// and allocation controllers render and decide in).
var DomainChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || o.Status.Domain != n.Status.Domain
	},
}

// IdentityKey is what the identity controller decides of a ClusterIngress in one string: its
// status.clusterID and status.domain, and DomainAssigned (status, reason, message, generation).
// The DNS controller publishes for that domain, or says why it does not.
func IdentityKey(ci *v1alpha1.ClusterIngress) string {
	key := ci.Status.ClusterID + "/" + ci.Status.Domain
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDomainAssigned); c != nil {
		key += fmt.Sprintf("/%s/%s/%d/%s", c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return key
}

// CertificateChanged passes ClusterIngress updates that change the certificate's serial number
// or validity (a new issuance the routers must get).
var CertificateChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || certificateKey(o) != certificateKey(n)
	},
}

func certificateKey(ci *v1alpha1.ClusterIngress) string {
	c := ci.Status.Certificate
	if c == nil {
		return ""
	}
	key := c.SerialNumber
	if c.NotAfter != nil {
		key += "/" + c.NotAfter.UTC().String()
	}
	return key
}

// VIPsChanged passes ClusterIngress updates that change a VIP shard's addresses, router IDs or
// homes (what routers and DNS are rendered from; observed holders are not).
var VIPsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || VIPKey(o) != VIPKey(n)
	},
}

// VIPKey is the VIP shards' addresses, router IDs and homes in one string.
func VIPKey(ci *v1alpha1.ClusterIngress) string {
	var b strings.Builder
	for _, s := range ci.Status.VIPs {
		b.WriteString(s.Shard + "=")
		for _, a := range s.Addresses {
			fmt.Fprintf(&b, "%s#%d@%s,", a.Address, a.RouterID, a.Home)
		}
		b.WriteString(";")
	}
	return b.String()
}

// LoadChanged passes ClusterIngress updates that change a shard's load state (what the users'
// ConfigMap tells; the figures are not) or the replicas of routers that follow load.
var LoadChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || !maps.Equal(LoadStates(o), LoadStates(n)) || !maps.Equal(followed(o), followed(n))
	},
}

func followed(ci *v1alpha1.ClusterIngress) map[string]int32 {
	out := map[string]int32{}
	for _, l := range ci.Status.ShardLoad {
		out[l.Shard] = l.Replicas
	}
	return out
}

// LoadStates are the shards' load states (status.shardLoad) by shard.
func LoadStates(ci *v1alpha1.ClusterIngress) map[string]v1alpha1.ShardLoadState {
	out := map[string]v1alpha1.ShardLoadState{}
	for _, l := range ci.Status.ShardLoad {
		out[l.Shard] = l.State
	}
	return out
}

// ClaimsChanged passes ClusterIngress updates that change the claimed shards or what they bind
// (status.claims: shard, flavour, admitted replicas and resources, bound routes, phase).
var ClaimsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || ClaimsKey(o) != ClaimsKey(n)
	},
}

// RunningFlavoursChanged passes ClusterIngress updates that change the flavour or image a profile
// shard's routers run (ClusterIngress.Shards: status.shardFlavours, where allocation admits a held
// flavour change).
var RunningFlavoursChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || runningFlavoursKey(o) != runningFlavoursKey(n)
	},
}

// runningFlavoursKey is each profile shard's running flavour and image in one string.
func runningFlavoursKey(ci *v1alpha1.ClusterIngress) string {
	var b strings.Builder
	for _, s := range ci.Shards() {
		if s.Claim == "" {
			fmt.Fprintf(&b, "%s=%s,%s;", s.Name, s.Flavour, s.Image)
		}
	}
	return b.String()
}

// ClaimsKey is status.claims' shards, settings, bindings and phases in one string (reasons and
// messages left out).
func ClaimsKey(ci *v1alpha1.ClusterIngress) string {
	var b strings.Builder
	for _, c := range ci.Status.Claims {
		fmt.Fprintf(&b, "%s/%s=%s,%s,%s,%d,%s,%s,%v,%v,%v;", c.Namespace, c.Name, c.Shard, c.Flavour, c.Image, c.Replicas,
			c.Resources.String(), c.Phase, c.Ingresses, c.HTTPRoutes, c.GRPCRoutes)
	}
	return b.String()
}
