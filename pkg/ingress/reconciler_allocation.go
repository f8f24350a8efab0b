package ingress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/usercluster"
	"github.com/shardgate/shardgate/pkg/validation"
)

// AllocationReconciler allocates every Ingress of a user cluster to a shard (PlanAllocations) and
// tells its owner the outcome in the user cluster: the shard label, annotations, default hosts
// and an Event (the address comes from the shard's routers; see write).
type AllocationReconciler struct {
	Client  client.Client
	Engager *usercluster.Engager

	// unseen holds, per cluster, the Ingresses written by the last pass whose new state the
	// cache has not shown yet (UID -> the resourceVersion the write started from). The next
	// pass skips them instead of writing the same decision again (and recording a second Event)
	// from a stale copy.
	unseenMu sync.Mutex
	unseen   map[types.NamespacedName]map[types.UID]string
}

// Reconcile plans all of a cluster's Ingresses at once and writes what changed.
func (r *AllocationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, ok := r.Engager.Get(req.NamespacedName)
	if ci.DeletionTimestamp != nil || ci.Status.Domain == "" || !ok || !cluster.Observable() {
		return ctrl.Result{}, nil // nothing is decided while the cluster cannot be observed
	}
	// The zone of the domain the cluster holds (its spec may ask for another one not held yet).
	_, zone, _ := strings.Cut(ci.Status.Domain, ".")
	strategy, err := StrategyFor(ci.Spec.Allocation.Strategy)
	if err != nil {
		return ctrl.Result{}, nil // the CRD's enum keeps this out; nothing to retry
	}
	specs := shardSpecs(ci)
	if errs := validation.Shards(specs, field.NewPath("spec", "shards")); len(errs) > 0 {
		return ctrl.Result{}, nil // nothing is decided from an invalid spec; ShardsAvailable says why
	}
	rd := cluster.Reader()
	shards, err := allocShards(ctx, rd, specs, ci.Status.Domain)
	if err != nil {
		return ctrl.Result{}, usercluster.DescribeError("read the user cluster's cache", err)
	}
	ingresses, routes, released, err := collectRoutes(ctx, rd, v1alpha1.ResolveIngressClass(ci.Spec.IngressClass).Default)
	if err != nil {
		return ctrl.Result{}, usercluster.DescribeError("read the user cluster's cache", err)
	}
	cfg := AllocationConfig{ClusterDomain: ci.Status.Domain, Zone: zone, Strategy: strategy,
		InterNamespace: ci.Spec.Allocation.NamespaceOwnership == v1alpha1.OwnershipInterNamespaceAllowed,
		AllowWildcards: ci.Spec.Allocation.WildcardPolicy == v1alpha1.WildcardsAllowed}
	var allocated, rejected int32
	pass := newWritePass(r.takeUnseen(req.NamespacedName))
	w := cluster.Writer()
	for _, a := range PlanAllocations(cfg, shards, routes) {
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
	if ci.Status.Routes != allocated || ci.Status.RejectedRoutes != rejected {
		before := ci.DeepCopy()
		ci.Status.Routes, ci.Status.RejectedRoutes = allocated, rejected
		if err := r.Client.Status().Patch(ctx, ci, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// shardSpecs are the ClusterIngress' shards (the default shard when it lists none).
func shardSpecs(ci *v1alpha1.ClusterIngress) []v1alpha1.ShardSpec {
	if len(ci.Spec.Shards) == 0 {
		return v1alpha1.ResolveShards(nil)
	}
	return ci.Spec.Shards
}

// allocShards turns validated shard specs into planner shards with their ready routers.
func allocShards(ctx context.Context, rd client.Reader, specs []v1alpha1.ShardSpec, clusterDomain string) ([]AllocShard, error) {
	var out []AllocShard
	for _, s := range specs {
		as := AllocShard{Name: s.Name, Domain: names.ShardDomain(s.Name, clusterDomain)}
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
func collectRoutes(ctx context.Context, rd client.Reader, policy v1alpha1.DefaultClassPolicy) (map[string]*networkingv1.Ingress, []Route, []*networkingv1.Ingress, error) {
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
	classless := ClasslessAreOurs(classes.Items, policy)
	il := &networkingv1.IngressList{}
	// Read-only use: the planner copies what it keeps, write copies before changing.
	if err := rd.List(ctx, il, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	var released []*networkingv1.Ingress
	byKey := map[string]*networkingv1.Ingress{}
	var routes []Route
	for i := range il.Items {
		ing := &il.Items[i]
		if ing.DeletionTimestamp != nil {
			continue
		}
		if !Ours(ing, classless) {
			if carriesAllocation(ing) {
				released = append(released, ing)
			}
			continue
		}
		byKey[ing.Namespace+"/"+ing.Name] = ing
		r := Route{Namespace: ing.Namespace, Name: ing.Name, Labels: ing.Labels, NamespaceLabels: nsLabels[ing.Namespace],
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

// allocationKeys are the annotations Shardgate writes on an Ingress (besides the shard label).
var allocationKeys = []string{v1alpha1.AllocationAnnotation, v1alpha1.ShardAnnotation, v1alpha1.HostsAnnotation, v1alpha1.CNAMETargetAnnotation}

// carriesAllocation reports whether the Ingress has Shardgate's shard label or any of its
// allocation annotations.
func carriesAllocation(ing *networkingv1.Ingress) bool {
	if _, ok := ing.Labels[v1alpha1.ShardLabel]; ok {
		return true
	}
	for _, k := range allocationKeys {
		if _, ok := ing.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// untell returns a copy of ing without Shardgate's shard label and allocation annotations. The
// hosts it was given stay: they are part of the user's Ingress now.
func untell(ing *networkingv1.Ingress) *networkingv1.Ingress {
	want := ing.DeepCopy()
	delete(want.Labels, v1alpha1.ShardLabel)
	for _, k := range allocationKeys {
		delete(want.Annotations, k)
	}
	return want
}

// release takes Shardgate's label and annotations off an Ingress that moved to another ingress
// class (the admission policy keeps users from removing them), with an Event saying so.
func (r *AllocationReconciler) release(ctx context.Context, w client.Client, ing *networkingv1.Ingress) (bool, error) {
	if err := w.Update(ctx, untell(ing), client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, usercluster.DescribeError(fmt.Sprintf("release ingress %s/%s", ing.Namespace, ing.Name), err)
	}
	r.record(ctx, w, ing, corev1.EventTypeNormal, v1alpha1.AllocationReleased,
		"the Ingress is another ingress controller's now (its class): Shardgate no longer allocates it")
	return true, nil
}

// write makes the Ingress say what was decided, and records an Event when the decision changed.
// It reports whether it wrote anything. Writes are updates of the cached object: sent as
// protobuf (cheaper for the API server than a JSON merge patch) and guarded by its
// resourceVersion, so a stale cache never overwrites a user's concurrent change of the rules; a
// conflict is left to the next pass, which the newer version's watch event starts.
//
// The address (status.loadBalancer) of an allocated Ingress is published by the shard's routers
// once they serve it (see Flavour), as OpenShift's router and ingress-nginx do: the ADDRESS
// column then also says that a router has picked the Ingress up, and allocating costs the user
// cluster's API server two writes per Ingress instead of three. Shardgate only clears the
// address of an Ingress it rejects, which no router serves any more.
func (r *AllocationReconciler) write(ctx context.Context, w client.Client, ing *networkingv1.Ingress, a Allocation) (bool, error) {
	if alreadySays(ing, a) {
		return false, nil // the common case on every pass: no copy, no request
	}
	want, changed := tell(ing, a)
	if changed {
		if err := w.Update(ctx, want, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, usercluster.DescribeError(fmt.Sprintf("ingress %s/%s", ing.Namespace, ing.Name), err)
		}
		r.event(ctx, w, ing, a)
	}
	if !a.Rejected || len(want.Status.LoadBalancer.Ingress) == 0 {
		return changed, nil
	}
	want.Status.LoadBalancer.Ingress = nil
	if err := w.Status().Update(ctx, want, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return changed, nil
		}
		return changed, usercluster.DescribeError(fmt.Sprintf("ingress %s/%s status", ing.Namespace, ing.Name), err)
	}
	return true, nil
}

// tell returns a copy of ing that says decision a in its labels, annotations and rules, and
// whether any of those changed.
func tell(ing *networkingv1.Ingress, a Allocation) (*networkingv1.Ingress, bool) {
	want := ing.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	outcome := v1alpha1.AllocationAllocated
	if a.Rejected {
		outcome = v1alpha1.AllocationRejected + ": " + a.Reason
		delete(want.Labels, v1alpha1.ShardLabel)
		for _, k := range allocationKeys {
			delete(want.Annotations, k) // the outcome is set below
		}
	} else {
		want.Labels[v1alpha1.ShardLabel] = a.Shard
		want.Annotations[v1alpha1.ShardAnnotation] = a.Shard
		want.Annotations[v1alpha1.HostsAnnotation] = strings.Join(a.Hosts, ",")
		if a.CNAMETarget != "" {
			want.Annotations[v1alpha1.CNAMETargetAnnotation] = a.CNAMETarget
		} else {
			delete(want.Annotations, v1alpha1.CNAMETargetAnnotation)
		}
		for i := range want.Spec.Rules {
			if want.Spec.Rules[i].Host == "" && i < len(a.Hosts) {
				want.Spec.Rules[i].Host = a.Hosts[i] // the default host
			}
		}
		if len(want.Spec.Rules) == 0 && want.Spec.DefaultBackend != nil && len(a.Hosts) == 1 {
			want.Spec.Rules = []networkingv1.IngressRule{defaultBackendRule(a.Hosts[0], *want.Spec.DefaultBackend)}
		}
	}
	want.Annotations[v1alpha1.AllocationAnnotation] = outcome
	changed := !equality.Semantic.DeepEqual(ing.ObjectMeta.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(ing.ObjectMeta.Annotations, want.Annotations) ||
		!equality.Semantic.DeepEqual(ing.Spec, want.Spec)
	return want, changed
}

// defaultBackendRule serves an Ingress that has only a default backend under its default host,
// so that it has a name like any other Ingress.
func defaultBackendRule(host string, backend networkingv1.IngressBackend) networkingv1.IngressRule {
	prefix := networkingv1.PathTypePrefix
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: backend}},
	}}}
}

// alreadySays reports, without copying, whether the Ingress already carries decision a.
func alreadySays(ing *networkingv1.Ingress, a Allocation) bool {
	ann := ing.Annotations
	if a.Rejected {
		_, labelled := ing.Labels[v1alpha1.ShardLabel]
		return !labelled && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationRejected+": "+a.Reason &&
			len(ing.Status.LoadBalancer.Ingress) == 0
	}
	if ing.Labels[v1alpha1.ShardLabel] != a.Shard || ann[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		ann[v1alpha1.ShardAnnotation] != a.Shard || ann[v1alpha1.CNAMETargetAnnotation] != a.CNAMETarget ||
		!joinedEquals(ann[v1alpha1.HostsAnnotation], a.Hosts) {
		return false
	}
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend != nil {
		return false // its default-host rule is still to be added
	}
	for _, r := range ing.Spec.Rules {
		if r.Host == "" {
			return false
		}
	}
	return true
}

// joinedEquals is s == strings.Join(parts, ",") without building the joined string.
func joinedEquals(s string, parts []string) bool {
	for i, p := range parts {
		if i > 0 {
			if s == "" || s[0] != ',' {
				return false
			}
			s = s[1:]
		}
		if !strings.HasPrefix(s, p) {
			return false
		}
		s = s[len(p):]
	}
	return s == ""
}

// event records the decision on the Ingress, in its namespace, for kubectl describe.
func (r *AllocationReconciler) event(ctx context.Context, w client.Client, ing *networkingv1.Ingress, a Allocation) {
	typ, reason, msg := corev1.EventTypeNormal, v1alpha1.AllocationAllocated,
		fmt.Sprintf("allocated to shard %s; hosts %s", a.Shard, strings.Join(a.Hosts, ", "))
	switch {
	case a.Rejected:
		typ, reason, msg = corev1.EventTypeWarning, v1alpha1.AllocationRejected, a.Reason
	case a.MovedFrom != "":
		typ, reason = corev1.EventTypeWarning, v1alpha1.AllocationMoved
		msg = fmt.Sprintf("moved from shard %s to shard %s: %s (hosts %s)", a.MovedFrom, a.Shard, a.MoveReason, strings.Join(a.Hosts, ", "))
	}
	if a.CNAMETarget != "" && !a.Rejected {
		msg += "; point your DNS at it: CNAME " + a.CNAMETarget
	}
	r.record(ctx, w, ing, typ, reason, msg)
}

// record writes an Event about the Ingress, in its namespace, for kubectl describe.
func (r *AllocationReconciler) record(ctx context.Context, w client.Client, ing *networkingv1.Ingress, typ, reason, msg string) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, GenerateName: ing.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ing.Namespace,
			Name: ing.Name, UID: ing.UID, ResourceVersion: ing.ResourceVersion},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "shardgate"}, ReportingController: "shardgate.io/seed-controller", ReportingInstance: "shardgate",
	}
	if err := w.Create(ctx, ev); err != nil {
		d, _ := usercluster.Describe(err)
		log.FromContext(ctx).Info("could not record event", "ingress", ing.Namespace+"/"+ing.Name, "error", d)
	}
}
