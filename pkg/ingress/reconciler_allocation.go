package ingress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// AllocationReconciler allocates every Ingress of a user cluster to a shard (PlanAllocations) and
// tells its owner the outcome in the user cluster: the shard label, annotations, default hosts,
// status.loadBalancer and an Event.
type AllocationReconciler struct {
	Client  client.Client
	Engager *usercluster.Engager
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
	zone, err := dnsname.NormalizeZone(ci.Spec.DNS.Zone)
	if err != nil {
		return ctrl.Result{}, nil // DNSPublished says why
	}
	strategy, err := StrategyFor(ci.Spec.Allocation.Strategy)
	if err != nil {
		return ctrl.Result{}, nil // the CRD's enum keeps this out; nothing to retry
	}
	rd := cluster.Reader()
	shards, err := allocShards(ctx, rd, ci)
	if err != nil {
		return ctrl.Result{}, err
	}
	ingresses, routes, err := collectRoutes(ctx, rd)
	if err != nil {
		return ctrl.Result{}, err
	}
	cfg := AllocationConfig{ClusterDomain: ci.Status.Domain, Zone: zone, Strategy: strategy,
		InterNamespace: ci.Spec.Allocation.NamespaceOwnership == "InterNamespaceAllowed", AllowWildcards: ci.Spec.Allocation.WildcardPolicy == "Allow"}
	var errs []error
	var allocated, rejected int32
	var mu sync.Mutex
	g := errgroup.Group{}
	g.SetLimit(writeWorkers)
	for _, a := range PlanAllocations(cfg, shards, routes) {
		if a.Rejected {
			rejected++
		} else {
			allocated++
		}
		ing := ingresses[a.Namespace+"/"+a.Name]
		g.Go(func() error {
			if err := r.write(ctx, cluster.Writer(), ing, a); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if ci.Status.Routes != allocated || ci.Status.RejectedRoutes != rejected {
		before := ci.DeepCopy()
		ci.Status.Routes, ci.Status.RejectedRoutes = allocated, rejected
		if err := r.Client.Status().Patch(ctx, ci, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// writeWorkers bounds the parallel writes of one cluster's decisions: a first allocation of
// thousands of Ingresses must not be written one round trip at a time.
const writeWorkers = 16

// allocShards turns the ClusterIngress' shards into planner shards with their ready routers.
func allocShards(ctx context.Context, rd client.Reader, ci *v1alpha1.ClusterIngress) ([]AllocShard, error) {
	specs := ci.Spec.Shards
	if len(specs) == 0 {
		specs = v1alpha1.ResolveShards(nil)
	}
	var out []AllocShard
	for _, s := range specs {
		as := AllocShard{Name: s.Name, Domain: ShardDomain(s.Name, ci.Status.Domain)}
		var err error
		if s.NamespaceSelector != nil {
			if as.NamespaceSelector, err = metav1.LabelSelectorAsSelector(s.NamespaceSelector); err != nil {
				continue // ShardsAvailable reports the invalid selector
			}
		}
		if s.RouteSelector != nil {
			if as.RouteSelector, err = metav1.LabelSelectorAsSelector(s.RouteSelector); err != nil {
				continue
			}
		}
		d := &appsv1.Deployment{}
		if err := rd.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: RouterName(s.Name)}, d); err == nil {
			as.Capacity = int(d.Status.ReadyReplicas)
		}
		out = append(out, as)
	}
	return out, nil
}

// collectRoutes lists the Ingresses Shardgate serves: class "shardgate" or no class.
func collectRoutes(ctx context.Context, rd client.Reader) (map[string]*networkingv1.Ingress, []Route, error) {
	nsl := &corev1.NamespaceList{}
	if err := rd.List(ctx, nsl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	nsLabels := map[string]map[string]string{}
	for _, n := range nsl.Items {
		nsLabels[n.Name] = n.Labels
	}
	il := &networkingv1.IngressList{}
	// Read-only use: the planner copies what it keeps, write copies before changing.
	if err := rd.List(ctx, il, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	byKey := map[string]*networkingv1.Ingress{}
	var routes []Route
	for i := range il.Items {
		ing := &il.Items[i]
		if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName != IngressClassName {
			continue
		}
		if ing.DeletionTimestamp != nil {
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
		}
		routes = append(routes, r)
	}
	return byKey, routes, nil
}

// write makes the Ingress say what was decided, and records an Event when the decision changed.
func (r *AllocationReconciler) write(ctx context.Context, w client.Client, ing *networkingv1.Ingress, a Allocation) error {
	if alreadySays(ing, a) {
		return nil // the common case on every pass: no copy, no request
	}
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
		for _, k := range []string{v1alpha1.ShardAnnotation, v1alpha1.HostsAnnotation, v1alpha1.CNAMETargetAnnotation} {
			delete(want.Annotations, k)
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
	}
	want.Annotations[v1alpha1.AllocationAnnotation] = outcome
	changed := !equality.Semantic.DeepEqual(ing.ObjectMeta.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(ing.ObjectMeta.Annotations, want.Annotations) ||
		!equality.Semantic.DeepEqual(ing.Spec, want.Spec)
	if changed {
		if err := w.Patch(ctx, want, client.MergeFrom(ing), client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
			return fmt.Errorf("ingress %s/%s: %w", ing.Namespace, ing.Name, err)
		}
		r.event(ctx, w, ing, a)
	}
	if !a.Rejected {
		return r.publishAddress(ctx, w, want, a.Domain)
	}
	return nil
}

// alreadySays reports, without copying, whether the Ingress already carries decision a.
func alreadySays(ing *networkingv1.Ingress, a Allocation) bool {
	ann := ing.Annotations
	if a.Rejected {
		_, labelled := ing.Labels[v1alpha1.ShardLabel]
		return !labelled && ann[v1alpha1.AllocationAnnotation] == v1alpha1.AllocationRejected+": "+a.Reason
	}
	if ing.Labels[v1alpha1.ShardLabel] != a.Shard || ann[v1alpha1.AllocationAnnotation] != v1alpha1.AllocationAllocated ||
		ann[v1alpha1.ShardAnnotation] != a.Shard || ann[v1alpha1.HostsAnnotation] != strings.Join(a.Hosts, ",") ||
		ann[v1alpha1.CNAMETargetAnnotation] != a.CNAMETarget {
		return false
	}
	for _, r := range ing.Spec.Rules {
		if r.Host == "" {
			return false
		}
	}
	lb := ing.Status.LoadBalancer.Ingress
	return len(lb) == 1 && lb[0].Hostname == a.Domain && lb[0].IP == ""
}

// publishAddress sets status.loadBalancer to the shard's domain apex: the ADDRESS column of
// kubectl get ingress. Traefik publishes the same name, so the two never fight.
func (r *AllocationReconciler) publishAddress(ctx context.Context, w client.Client, ing *networkingv1.Ingress, apex string) error {
	if apex == "" {
		return nil
	}
	lb := ing.Status.LoadBalancer.Ingress
	if len(lb) == 1 && lb[0].Hostname == apex && lb[0].IP == "" {
		return nil
	}
	before := ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: apex}}
	return w.Status().Patch(ctx, ing, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldOwner))
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
		msg = fmt.Sprintf("shard %s was removed; moved to shard %s (hosts %s)", a.MovedFrom, a.Shard, strings.Join(a.Hosts, ", "))
	}
	if a.CNAMETarget != "" && !a.Rejected {
		msg += "; point your DNS at it: CNAME " + a.CNAMETarget
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, GenerateName: ing.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ing.Namespace,
			Name: ing.Name, UID: ing.UID, ResourceVersion: ing.ResourceVersion},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "shardgate"}, ReportingController: "shardgate.io/seed-controller", ReportingInstance: "shardgate",
	}
	if err := w.Create(ctx, ev); err != nil {
		log.FromContext(ctx).Info("could not record event", "ingress", ing.Namespace+"/"+ing.Name, "error", err.Error())
	}
}
