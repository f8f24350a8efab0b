package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// AppliedHashAnnotation carries, on every object Shardgate applies, a hash of what it applied.
// A field dropped from a shard's spec (a nodeSelector, a toleration, a map key) changes the hash,
// so the object is applied again and server-side apply removes the field: comparing the cached
// object with the desired one field by field cannot see a field that is no longer desired.
const AppliedHashAnnotation = "shardgate.io/applied-hash"

// DesiredInput is what the shard controller renders from.
type DesiredInput struct {
	ClusterDomain string
	TTL           int64
	Shards        []v1alpha1.ShardSpec
	// ShardgateUser is who Shardgate is in the cluster; the admission policy exempts only it.
	ShardgateUser string
	// AdmissionPolicy: the cluster serves ValidatingAdmissionPolicy (else none is rendered).
	AdmissionPolicy bool
	// TLS, when set, gives every router the cluster's certificate.
	TLS *TLSInput
	// VIP per VIP shard name.
	VIP map[string]*VIPInput
	// Canary gives every shard its canary route.
	Canary bool
	// RouteKinds are the cluster's route kinds: the admission policy protects each, and the
	// canary route is of those that route it.
	RouteKinds routekinds.Registry
	// GatewayAPI: the cluster serves Gateway API (and it is not turned off): the parent Gateway
	// and every shard's Gateway are rendered.
	GatewayAPI bool
	// ListenerSets: the cluster serves ListenerSets, which may attach to the parent Gateway.
	ListenerSets bool
	// LoadStates are the load-reporting shards' states (status.shardLoad), told to users.
	LoadStates map[string]v1alpha1.ShardLoadState
	// ChangingTo are the flavours held flavour changes will give shards (ClusterIngress'
	// FlavourChanges): the admission policy guards what their routers would read already, so that
	// nothing of it is planted while a change waits to be admitted.
	ChangingTo []v1alpha1.Flavour
	// Listeners are the tenants' listeners each shard's Gateway takes, and Grants the Secrets per
	// namespace they read (listenersets.Decide): a ReferenceGrant in each such namespace.
	Listeners map[string][]listenersets.Listener
	Grants    map[string][]string
}

// Desired is what the shard controller applies: the cluster-wide objects (shared by every shard,
// the certificate, the users' info ConfigMap, the admission policy), then each shard's own.
type Desired struct {
	Cluster []*unstructured.Unstructured
	Shards  []ShardObjects
	// Tenants are objects in tenants' namespaces (the ReferenceGrants of their ListenerSets), by
	// namespace: one that cannot be applied affects that namespace only.
	Tenants map[string][]*unstructured.Unstructured
}

// ShardObjects are one shard's objects, or why they could not be rendered.
type ShardObjects struct {
	Name    string
	Objects []*unstructured.Unstructured
	Err     error
}

// All is every rendered object, cluster-wide first.
func (d Desired) All() []*unstructured.Unstructured {
	out := slices.Clone(d.Cluster)
	for _, s := range d.Shards {
		out = append(out, s.Objects...)
	}
	for _, ns := range slices.Sorted(maps.Keys(d.Tenants)) {
		out = append(out, d.Tenants[ns]...)
	}
	return out
}

// DesiredObjects is RenderDesired's objects in order, failing on any shard's error (for tests
// and tools that want everything or nothing).
func DesiredObjects(in DesiredInput) ([]*unstructured.Unstructured, error) {
	d, err := RenderDesired(in)
	if err != nil {
		return nil, err
	}
	for _, s := range d.Shards {
		if s.Err != nil {
			return nil, s.Err
		}
	}
	return d.All(), nil
}

// RenderDesired renders the cluster-wide objects and every shard's objects, each stamped with
// the hash of its own content. A shard that cannot be rendered carries its error and leaves the
// others whole: one shard (a tenant's claim among them) never keeps the cluster's certificate,
// admission policy or other shards from being applied.
func RenderDesired(in DesiredInput) (Desired, error) {
	var d Desired
	// The flavours in use, in the order of their first shard: each brings its class, its role and
	// its TLS wiring once.
	var used []Flavour
	for _, s := range in.Shards {
		f, ok := FlavourFor(s.Flavour)
		if !ok {
			d.Shards = append(d.Shards, ShardObjects{Name: s.Name, Err: fmt.Errorf("shard %s: unknown flavour %q", s.Name, s.Flavour)})
			continue
		}
		if !in.AdmissionPolicy && f.TenantGuards().any() {
			// Without the policy nothing would keep tenants' annotations out of the routers' shared
			// configuration: no routers rather than routers any tenant can reconfigure.
			d.Shards = append(d.Shards, ShardObjects{Name: s.Name, Err: fmt.Errorf("shard %s: %s routers read tenants' "+
				"annotations as configuration every tenant shares, which only Shardgate's admission policy keeps from them, "+
				"and this cluster serves no ValidatingAdmissionPolicy (Kubernetes 1.30 or later)", s.Name, f.Name())})
			continue
		}
		if !slices.ContainsFunc(used, func(g Flavour) bool { return g.Name() == f.Name() }) {
			shared, err := SharedObjects(f)
			if err != nil {
				return Desired{}, err
			}
			d.Cluster = append(d.Cluster, shared...)
			used = append(used, f)
		}
		objs, err := RenderShard(f, RenderInput{Domain: names.ShardDomain(s.Name, in.ClusterDomain), Shard: s, DNSTTL: in.TTL,
			TLS: in.TLS, VIP: in.VIP[s.Name], Canary: in.Canary, RouteKinds: in.RouteKinds,
			GatewayAPI: in.GatewayAPI, TenantListeners: in.Listeners[s.Name]})
		if err != nil {
			d.Shards = append(d.Shards, ShardObjects{Name: s.Name, Err: fmt.Errorf("shard %s: %w", s.Name, err)})
			continue
		}
		so := ShardObjects{Name: s.Name}
		for _, o := range objs {
			if o.GetLabels()[v1alpha1.ShardLabel] == "" {
				d.Cluster = append(d.Cluster, o) // shared by every shard of the flavour (its ClusterRole)
			} else {
				so.Objects = append(so.Objects, o)
			}
		}
		d.Shards = append(d.Shards, so)
	}
	if in.TLS != nil {
		tls, err := TLSObjects(in.TLS, used...)
		if err != nil {
			return Desired{}, err
		}
		d.Cluster = append(d.Cluster, tls...)
	}
	info, err := UserInfo(in.ClusterDomain, in.Shards, in.TLS != nil, in.GatewayAPI, in.LoadStates)
	if err != nil {
		return Desired{}, err
	}
	d.Cluster = append(d.Cluster, info)
	if in.GatewayAPI {
		parent, err := ParentGateway(in.ListenerSets)
		if err != nil {
			return Desired{}, err
		}
		d.Cluster = append(d.Cluster, parent...)
		if d.Tenants, err = ListenerGrants(in.Grants); err != nil {
			return Desired{}, err
		}
	}
	if in.AdmissionPolicy {
		cluster, claimed, namespaces := guardsOf(in.Shards, in.ChangingTo)
		policy, err := AdmissionPolicy(in.ShardgateUser, in.RouteKinds, cluster)
		if err != nil {
			return Desired{}, err
		}
		d.Cluster = append(d.Cluster, policy...)
		if claimed.any() {
			scoped, err := ClaimGuardsPolicy(in.ShardgateUser, in.RouteKinds, claimed, namespaces)
			if err != nil {
				return Desired{}, err
			}
			d.Cluster = append(d.Cluster, scoped...)
		}
	}
	seen := map[string]bool{}
	d.Cluster = dedupe(d.Cluster, seen)
	for i := range d.Shards {
		d.Shards[i].Objects = dedupe(d.Shards[i].Objects, seen)
	}
	for _, o := range d.All() {
		if err := StampHash(o); err != nil {
			return Desired{}, err
		}
	}
	return d, nil
}

// StampHash sets AppliedHashAnnotation to the hash of the object without it.
func StampHash(o *unstructured.Unstructured) error {
	ann := o.GetAnnotations()
	delete(ann, AppliedHashAnnotation)
	if len(ann) == 0 {
		ann = nil
	}
	o.SetAnnotations(ann)
	b, err := json.Marshal(o.Object) // maps marshal with sorted keys: deterministic
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AppliedHashAnnotation] = hex.EncodeToString(sum[:16])
	o.SetAnnotations(ann)
	return nil
}

// dedupe keeps the first of objects with the same kind and name, across calls sharing seen (the
// shared ClusterRole is rendered once per shard).
func dedupe(objs []*unstructured.Unstructured, seen map[string]bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		k := ObjKey(o.GetKind(), o.GetNamespace(), o.GetName())
		if !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	return out
}

// ObjKey identifies a rendered object by kind, namespace and name.
func ObjKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// guardsOf splits the tenant guards of the shards' flavours: those of the profile's shards hold
// cluster-wide (the operator chose those routers for every tenant), those of flavours only claimed
// shards run hold in the claims' namespaces alone (a claimed shard takes routes, and the Services
// they name, from its claim's namespace only: one tenant's claim never restricts another's writes).
// The flavours held changes will give profile shards (changingTo) hold cluster-wide too.
func guardsOf(shards []v1alpha1.ShardSpec, changingTo []v1alpha1.Flavour) (cluster, claimed TenantGuards, namespaces []string) {
	profile := map[v1alpha1.Flavour]bool{}
	guard := func(flavour v1alpha1.Flavour) {
		if f, ok := FlavourFor(flavour); ok && !profile[flavour] {
			cluster, profile[flavour] = cluster.with(f.TenantGuards()), true
		}
	}
	for _, s := range shards {
		if s.Claim == "" {
			guard(s.Flavour)
		}
	}
	for _, f := range changingTo {
		guard(f)
	}
	added := map[v1alpha1.Flavour]bool{}
	for _, s := range shards {
		f, ok := FlavourFor(s.Flavour)
		if !ok || s.Claim == "" || profile[s.Flavour] || !f.TenantGuards().any() {
			continue
		}
		if !added[s.Flavour] {
			claimed, added[s.Flavour] = claimed.with(f.TenantGuards()), true
		}
		ns, _, _ := strings.Cut(s.Claim, "/")
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	return cluster, claimed, slices.Compact(namespaces)
}
