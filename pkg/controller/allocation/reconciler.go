package allocation

import (
	"context"
	"errors"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler allocates every Ingress of a user cluster to a shard (allocation.PlanAllocations)
// and tells its owner the outcome in the user cluster: the shard label, annotations, default
// hosts and an Event (the address comes from the shard's routers; see write). On deletion of the
// ClusterIngress it takes all of that back (reconciler_delete.go).
type Reconciler struct {
	Client client.Client
	Access clusteraccess.Access
	// Board takes status.routes and status.rejectedRoutes (cistatus.Allocation).
	Board *cistatus.Board

	// unseen holds, per cluster, the Ingresses written by the last pass whose new state the
	// cache has not shown yet (UID -> the resourceVersion the write started from). The next
	// pass skips them instead of writing the same decision again (and recording a second Event)
	// from a stale copy.
	unseenMu sync.Mutex
	unseen   map[types.NamespacedName]map[types.UID]string
}

// Reconcile plans all of a cluster's Ingresses at once and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	if ci.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, ci)
	}
	if err := ensureFinalizer(ctx, r.Client, ci); err != nil {
		return ctrl.Result{}, err
	}
	cluster, ok := r.Access.Get(req.NamespacedName)
	if ci.Status.Domain == "" || !ok || !cluster.Observable() {
		return ctrl.Result{}, nil // nothing is decided while the cluster cannot be observed
	}
	// The zone of the domain the cluster holds (its spec may ask for another one not held yet).
	_, zone, _ := strings.Cut(ci.Status.Domain, ".")
	strategy, err := allocation.StrategyFor(ci.Spec.Allocation.Strategy)
	if err != nil {
		return ctrl.Result{}, nil //nolint:nilerr // the CRD's enum keeps this out; nothing to retry
	}
	specs := ci.Shards()
	if errs := validation.Shards(specs, field.NewPath("spec", "shards")); len(errs) > 0 {
		return ctrl.Result{}, nil // nothing is decided from an invalid spec; ShardsAvailable says why
	}
	rd := cluster.Reader()
	shards, err := allocShards(ctx, rd, specs, ci.Status.Domain)
	if err != nil {
		return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
	}
	ingresses, routes, released, err := collectRoutes(ctx, rd, v1alpha1.ResolveIngressClass(ci.Spec.IngressClass).Default)
	if err != nil {
		return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
	}
	pins := claimPins(ci)
	for i := range routes {
		routes[i].Pin = pins[routes[i].Namespace+"/"+routes[i].Name]
	}
	cfg := allocation.Config{ClusterDomain: ci.Status.Domain, Zone: zone, Strategy: strategy,
		InterNamespace: ci.Spec.Allocation.NamespaceOwnership == v1alpha1.OwnershipInterNamespaceAllowed,
		AllowWildcards: ci.Spec.Allocation.WildcardPolicy == v1alpha1.WildcardsAllowed}
	var allocated, rejected int32
	pass := newWritePass(r.takeUnseen(req.NamespacedName))
	w := cluster.Writer()
	for _, a := range allocation.PlanAllocations(cfg, shards, routes) {
		if a.Rejected {
			rejected++
		} else {
			allocated++
		}
		ing := ingresses[a.Namespace+"/"+a.Name]
		pass.write(ing, func() (bool, error) { return r.write(ctx, w, ing, a) })
	}
	for _, ing := range released {
		pass.write(ing, func() (bool, error) { return r.release(ctx, w, ing) })
	}
	stillUnseen, errs := pass.wait()
	r.putUnseen(req.NamespacedName, stillUnseen)
	recordRoutes(req.String(), allocated, rejected)
	ci.Status.Routes, ci.Status.RejectedRoutes = allocated, rejected
	r.Board.Post(ctx, ci, cistatus.Allocation)
	return ctrl.Result{}, errors.Join(errs...)
}

// claimPins are the Ingresses (namespace/name) bound by claims that bind (Pending or Bound), with
// their claimed shard.
func claimPins(ci *v1alpha1.ClusterIngress) map[string]string {
	pins := map[string]string{}
	for _, c := range ci.ActiveClaims() {
		if c.Phase != v1alpha1.ClaimPending && c.Phase != v1alpha1.ClaimBound {
			continue
		}
		for _, name := range c.Ingresses {
			pins[c.Namespace+"/"+name] = c.Shard
		}
	}
	return pins
}

// allocShards turns validated shard specs into planner shards with their ready routers.
func allocShards(ctx context.Context, rd client.Reader, specs []v1alpha1.ShardSpec, clusterDomain string) ([]allocation.Shard, error) {
	var out []allocation.Shard
	for _, s := range specs {
		as := allocation.Shard{Name: s.Name, Domain: names.ShardDomain(s.Name, clusterDomain), Claim: s.Claim}
		var err error
		if s.NamespaceSelector != nil {
			if as.NamespaceSelector, err = metav1.LabelSelectorAsSelector(s.NamespaceSelector); err != nil {
				return nil, err // validated before; never silently dropped with its Ingresses moved
			}
		}
		if s.RouteSelector != nil {
			if as.RouteSelector, err = metav1.LabelSelectorAsSelector(s.RouteSelector); err != nil {
				return nil, err
			}
		}
		d := &appsv1.Deployment{}
		if err := rd.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(s.Name)}, d); err == nil {
			as.Capacity = int(d.Status.ReadyReplicas)
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
		out = append(out, as)
	}
	return out, nil
}

// collectRoutes lists the Ingresses Shardgate serves (Ours), and those it does not that still
// carry Shardgate's allocation (to be released).
func collectRoutes(ctx context.Context, rd client.Reader, policy v1alpha1.DefaultClassPolicy) (map[string]*networkingv1.Ingress, []allocation.Route, []*networkingv1.Ingress, error) {
	nsl := &corev1.NamespaceList{}
	if err := rd.List(ctx, nsl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	nsLabels := map[string]map[string]string{}
	for _, n := range nsl.Items {
		nsLabels[n.Name] = n.Labels
	}
	classes := &networkingv1.IngressClassList{}
	if err := rd.List(ctx, classes); err != nil {
		return nil, nil, nil, err
	}
	classless := ingressclass.ClasslessAreOurs(classes.Items, policy)
	il := &networkingv1.IngressList{}
	// Read-only use: the planner copies what it keeps, write copies before changing.
	if err := rd.List(ctx, il, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	var released []*networkingv1.Ingress
	byKey := map[string]*networkingv1.Ingress{}
	var routes []allocation.Route
	for i := range il.Items {
		ing := &il.Items[i]
		if ing.DeletionTimestamp != nil || shardgatesOwn(ing) {
			continue
		}
		if !ingressclass.Ours(ing, classless) {
			if allocation.CarriesAllocation(ing) {
				released = append(released, ing)
			}
			continue
		}
		byKey[ing.Namespace+"/"+ing.Name] = ing
		r := allocation.Route{Namespace: ing.Namespace, Name: ing.Name, Labels: ing.Labels, NamespaceLabels: nsLabels[ing.Namespace],
			Created: ing.CreationTimestamp.Time}
		for _, rule := range ing.Spec.Rules {
			r.Hosts = append(r.Hosts, rule.Host)
		}
		// Only Shardgate's own allocation counts; a label without our annotation is not one.
		if ing.Annotations[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationAllocated {
			r.Shard = ing.Labels[v1alpha1.ShardLabel]
			if h := ing.Annotations[v1alpha1.HostsAnnotation]; h != "" {
				r.HeldHosts = strings.Split(h, ",")
			}
		}
		routes = append(routes, r)
	}
	return byKey, routes, released, nil
}

// shardgatesOwn reports whether ing is one of Shardgate's own routes (the shards' canaries), which
// are not allocated: the managed-by label counts only in Shardgate's namespace, which tenants
// cannot write. Anywhere else it is a tenant's Ingress like any other, checked and allocated.
func shardgatesOwn(ing *networkingv1.Ingress) bool {
	return ing.Namespace == names.Namespace && ing.Labels[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue
}
