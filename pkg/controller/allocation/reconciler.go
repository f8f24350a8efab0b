package allocation

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/routerload"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler allocates every route of a user cluster to a shard (allocation.PlanAllocations),
// whatever its kind (the cluster's routekinds.Registry: an Ingress today), and tells its owner
// the outcome in the user cluster: the shard label, annotations, default hosts and an Event (the
// address comes from the shard's routers; see write). On deletion of the ClusterIngress it takes
// all of that back (reconciler_delete.go).
type Reconciler struct {
	Client client.Client
	Access clusteraccess.Access
	// Board takes status.routes and status.rejectedRoutes (cistatus.Allocation).
	Board *cistatus.Board

	// unseen holds, per cluster, the routes written by the last pass whose new state the
	// cache has not shown yet (UID -> the resourceVersion the write started from). The next
	// pass skips them instead of writing the same decision again (and recording a second Event)
	// from a stale copy.
	unseenMu sync.Mutex
	unseen   map[types.NamespacedName]map[types.UID]string
	// rounds holds, per cluster, the statuses told in the round of passes that yielded them
	// (statusRound), under unseenMu.
	rounds map[types.NamespacedName]statusRound
	// extenders are the profiles' allocation extenders' clients.
	extenders extenders
}

// Reconcile plans all of a cluster's routes at once, of every kind, and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	// Taken by every pass, so a pass that decides nothing (the cluster gone, held) drops it.
	lastRound := r.takeRound(req.NamespacedName)
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
	strategy, fallbacks, err := r.strategy(ctx, req.String(), ci.Spec.Allocation)
	if err != nil {
		return ctrl.Result{}, nil //nolint:nilerr // the CRD's enum keeps this out; nothing to retry
	}
	specs := ci.Shards()
	if errs := validation.Shards(specs, field.NewPath("spec", "shards")); len(errs) > 0 {
		return ctrl.Result{}, nil // nothing is decided from an invalid spec; ShardsAvailable says why
	}
	rd := cluster.Reader()
	shards, err := allocShards(ctx, rd, specs, ci.Status.Domain, time.Now())
	if err != nil {
		return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
	}
	flavourChanges := ci.FlavourChanges()
	changingTo(shards, flavourChanges)
	kinds := cluster.RouteKinds()
	gatewayOff := cluster.Capabilities().GatewayAPI.Reason == v1alpha1.ReasonGatewayAPIDisabled
	if unserved := unservedPlanned(&ci.Status, kinds, gatewayOff); len(unserved) > 0 {
		meta.SetStatusCondition(&ci.Status.Conditions, allocationHeld(unserved, ci.Generation))
		r.Board.Post(ctx, ci, cistatus.Allocation)
		return ctrl.Result{}, nil // the kind's re-engagement (rightsLoop) or a profile change wakes the next pass
	}
	meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionAllocationHeld)
	// Counted before the routes are read: a route arriving after it makes the pass yield its statuses.
	undecided := cluster.Undecided()
	objects, routes, released, err := collectRoutes(ctx, rd, kinds, &ci.Spec, render.RouteFlavours(specs))
	if err != nil {
		return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
	}
	distrustNewKinds(routes, &ci.Status)
	pins := claimPins(ci, kinds)
	for i := range routes {
		routes[i].Pin = pins[routeKey(routes[i].Kind, routes[i].Namespace, routes[i].Name)]
	}
	cfg := allocation.Config{ClusterDomain: ci.Status.Domain, Zone: zone, Strategy: strategy,
		InterNamespace: ci.Spec.Allocation.NamespaceOwnership == v1alpha1.OwnershipInterNamespaceAllowed,
		AllowWildcards: ci.Spec.Allocation.WildcardPolicy == v1alpha1.WildcardsAllowed}
	pass := newWritePass(r.takeUnseen(req.NamespacedName), func() bool { return cluster.Undecided() != undecided })
	w := cluster.Writer()
	plan := allocation.PlanAllocations(cfg, shards, routes)
	changes := make([]change, 0, len(plan)+len(released))
	writes := make([]func() (bool, error), 0, cap(changes))
	targets := make([]client.Object, 0, cap(changes))
	written := map[string]bool{}
	for _, a := range plan {
		o := objects[routeKey(a.Kind, a.Namespace, a.Name)]
		c := routeChange(o.kind, o.route, a)
		if c == settled {
			continue // the common case on every pass: no closure, no write
		}
		if len(flavourChanges) > 0 && c == marks {
			written[routeKey(a.Kind, a.Namespace, a.Name)] = true
		}
		changes, targets = append(changes, c), append(targets, o.route)
		writes = append(writes, func() (bool, error) { return r.write(ctx, pass, w, o.kind, o.route, a, c == statusOnly) })
	}
	for _, o := range released {
		changes, targets = append(changes, marks), append(targets, o.route)
		writes = append(writes, func() (bool, error) { return r.release(ctx, pass, w, o.kind, o.route, o.released) })
	}
	pass.tellFor = time.Since(start) / planToTell
	told, round := lastRound.toldOf(changes, targets)
	order := passOrder(changes, told)
	for n, i := range order {
		if changes[i] != statusOnly {
			pass.write(targets[i], writes[i])
		} else if !pass.tell(targets[i], writes[i]) {
			yielded(ctx, req.String(), pass.told, len(order)-n)
			break
		}
	}
	stillUnseen, errs := pass.wait()
	r.putUnseen(req.NamespacedName, stillUnseen)
	r.putRound(req.NamespacedName, round.next(pass.yielded, pass.toldNow, routeUIDs(objects)))
	ci.Status.PlannedKinds = plannedKinds(&ci.Status, kinds, gatewayOff)
	ci.Status.RouteKinds = countByKind(kinds, plan)
	ci.Status.Routes, ci.Status.RejectedRoutes = 0, 0
	for _, c := range ci.Status.RouteKinds {
		ci.Status.Routes, ci.Status.RejectedRoutes = ci.Status.Routes+c.Routes, ci.Status.RejectedRoutes+c.Rejected
	}
	recordRoutes(req.String(), ci.Status.Routes, ci.Status.RejectedRoutes)
	var held []heldChange
	if len(flavourChanges) > 0 {
		held = holdChanges(ctx, w, flavourChanges, cluster.Capabilities().AdmissionPolicy, cfg, shards, routes, plan,
			objects, written)
	}
	ci.Status.ShardFlavours = shardFlavours(ci.Spec.ShardsOrDefault(), held)
	if c := flavourChangesHeld(held); c != nil {
		c.ObservedGeneration = ci.Generation
		meta.SetStatusCondition(&ci.Status.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
	}
	if c := customStrategyCondition(ci.Spec.Allocation, fallbacks, ci.Status.Conditions); c != nil {
		c.ObservedGeneration = ci.Generation
		meta.SetStatusCondition(&ci.Status.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionCustomStrategyApplied)
	}
	r.Board.Post(ctx, ci, cistatus.Allocation)
	var res ctrl.Result
	if len(held) > 0 {
		// Services are not watched: a held change looks again, as well as on every route event.
		res.RequeueAfter = heldChangeRecheck
	}
	if pass.yielded {
		// The new route's event starts the next pass at once; this only makes sure of it.
		res.RequeueAfter = yieldedRecheck
	}
	return res, errors.Join(errs...)
}

// planToTell bounds what a yielding pass spends re-planning: it tells statuses for at least a
// quarter of the time it took to read and plan the routes, so planning costs the seed at most four
// times the statuses told (linear, not N²), and a new route waits at most that quarter for them.
const planToTell = 4

// yieldedRecheck is when a pass that left statuses to the next looks again at the latest.
const yieldedRecheck = time.Second

// routeChange is what a pass must write to route for it to say a (passOrder).
func routeChange(k routekinds.Kind, route client.Object, a allocation.Allocation) change {
	if k.AlreadySays(route, a) {
		return settled
	}
	if _, changed := k.Tell(route, a); changed {
		return marks
	}
	return statusOnly
}

// claimPins are the routes (routeKey) bound by claims that bind (Pending or Bound), with their
// claimed shard.
func claimPins(ci *v1alpha1.ClusterIngress, kinds routekinds.Registry) map[string]string {
	pins := map[string]string{}
	for _, c := range ci.ActiveClaims() {
		if c.Phase != v1alpha1.ClaimPending && c.Phase != v1alpha1.ClaimBound {
			continue
		}
		for _, k := range kinds {
			for _, name := range k.ClaimBinds(c) {
				pins[routeKey(k.Name(), c.Namespace, name)] = c.Shard
			}
		}
	}
	return pins
}

// allocShards turns validated shard specs into planner shards with their ready routers and, for
// shards that report load, the load their routers report now.
func allocShards(ctx context.Context, rd client.Reader, specs []v1alpha1.ShardSpec, clusterDomain string, now time.Time,
) ([]allocation.Shard, error) {
	var reports map[string][]routerload.Report
	if slices.ContainsFunc(specs, func(s v1alpha1.ShardSpec) bool { return s.Load != nil }) {
		var err error
		if reports, err = routerload.Reports(ctx, rd, now); err != nil {
			return nil, err
		}
	}
	var out []allocation.Shard
	for _, s := range specs {
		as := allocation.Shard{Name: s.Name, Labels: s.Labels, Domain: names.ShardDomain(s.Name, clusterDomain), Claim: s.Claim}
		setFlavour(&as, s.Flavour)
		var err error
		if s.NamespaceSelector != nil {
			if as.NamespaceSelector, err = metav1.LabelSelectorAsSelector(s.NamespaceSelector); err != nil {
				return nil, err // validated before; never silently dropped with its routes moved
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
		if s.Load != nil {
			l := routerload.Observe(render.LoadShard(s, int32(as.Capacity), reports[s.Name], ""), now)
			as.Utilization, as.LoadKnown = l.UtilizationPercent, l.State != v1alpha1.LoadUnknown
			as.RequestsPerSecond, as.CapacityRPS = l.RequestsPerSecond, l.CapacityRequestsPerSecond
		}
		out = append(out, as)
	}
	return out, nil
}

// setFlavour gives a planner shard flavour f's routers.
func setFlavour(as *allocation.Shard, f v1alpha1.Flavour) {
	s := v1alpha1.ShardSpec{Name: as.Name, Flavour: f}
	as.Flavour, as.RouteClass, as.SharesRouteSpecs = string(f), render.ShardRouteClass(s), render.SharesRouteSpecs(s)
	as.OwnRouteClass = names.ShardRouteClass(as.Name)
	as.ReadsAnnotations = render.ReadsAnnotations(s)
}

// route is one route and its kind.
type route struct {
	kind  routekinds.Kind
	route client.Object
	// released is the route as releasing it leaves it (Kind.Released), for a route not Shardgate's.
	released client.Object
}

// routeUIDs yields the UIDs of routes.
func routeUIDs(routes map[string]route) func(yield func(types.UID) bool) {
	return func(yield func(types.UID) bool) {
		for _, r := range routes {
			if !yield(r.route.GetUID()) {
				return
			}
		}
	}
}

// routeKey names a route among every kind's: kind/namespace/name.
func routeKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// collectRoutes lists the routes of every kind Shardgate serves (Kind.Serves) by routeKey, each
// with the router flavour it is for, and those it does not serve that still carry Shardgate's
// allocation (to be released).
func collectRoutes(ctx context.Context, rd client.Reader, kinds routekinds.Registry, spec *v1alpha1.ClusterIngressSpec,
	flavours routekinds.Flavours,
) (map[string]route, []allocation.Route, []route, error) {
	nsl := &corev1.NamespaceList{}
	if err := rd.List(ctx, nsl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	nsLabels := map[string]map[string]string{}
	for _, n := range nsl.Items {
		nsLabels[n.Name] = n.Labels
	}
	byKey := map[string]route{}
	var routes []allocation.Route
	var released []route
	for _, k := range kinds {
		serves, err := k.Serves(ctx, rd, spec, flavours)
		if err != nil {
			return nil, nil, nil, err
		}
		list := k.NewList()
		// Read-only use: the planner copies what it keeps, write copies before changing.
		if err := rd.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, err
		}
		for _, o := range k.Items(list) {
			if o.GetDeletionTimestamp() != nil || shardgatesOwn(o) {
				continue
			}
			flavour, ours := serves(o)
			if !ours {
				if want, carried := k.Released(o); carried {
					released = append(released, route{kind: k, route: o, released: want})
				}
				continue
			}
			byKey[routeKey(k.Name(), o.GetNamespace(), o.GetName())] = route{kind: k, route: o}
			r := allocation.Route{Kind: k.Name(), Namespace: o.GetNamespace(), Name: o.GetName(), Labels: o.GetLabels(),
				NamespaceLabels: nsLabels[o.GetNamespace()], Created: o.GetCreationTimestamp().Time, Hosts: k.Hosts(o),
				Flavour: flavour}
			r.ClassAnnotated, r.Refusal = allocation.ClassAnnotated(o), k.Refusal(o)
			r.Annotations = slices.Collect(maps.Keys(o.GetAnnotations()))
			r.SelectableByClass = k.Name() == (routekinds.Ingress{}).Name()
			r.KeptFor = o.GetAnnotations()[v1alpha1.KeptForAnnotation]
			r.RouteClass = o.GetAnnotations()[v1alpha1.ShardClassAnnotation]
			r.Shard, r.HeldHosts = allocation.Held(o)
			routes = append(routes, r)
		}
	}
	return byKey, routes, released, nil
}

// shardgatesOwn reports whether o is one of Shardgate's own routes (the shards' canaries), which
// are not allocated: the managed-by label counts only in Shardgate's namespace, which tenants
// cannot write. Anywhere else it is a tenant's route like any other, checked and allocated.
func shardgatesOwn(o client.Object) bool {
	return o.GetNamespace() == names.Namespace && o.GetLabels()[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue
}

// countByKind counts the plan's allocated and rejected routes per kind, for every kind the cluster
// serves (in the registry's order, zero counts too: a kind served with no route says so).
func countByKind(kinds routekinds.Registry, plan []allocation.Allocation) []v1alpha1.RouteKindCount {
	out := make([]v1alpha1.RouteKindCount, len(kinds))
	at := map[string]int{}
	for i, k := range kinds {
		out[i].Kind, at[k.Name()] = k.Name(), i
	}
	for _, a := range plan {
		i, ok := at[a.Kind]
		if !ok {
			continue // planned only from the kinds served
		}
		if a.Rejected {
			out[i].Rejected++
		} else {
			out[i].Routes++
		}
	}
	return out
}
