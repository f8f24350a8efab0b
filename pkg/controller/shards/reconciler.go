package shards

import (
	"context"
	"fmt"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/ingressclass"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/predicates"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/validation"
)

// Reconciler deploys every shard of a ClusterIngress into its user cluster with server-side
// apply, prunes the objects of removed shards, and repairs drift (the user-cluster cache wakes it
// on any change to a managed object). It reports ShardsAvailable, RoutesProtected and
// GatewayAPIAvailable (through the status board), and on
// deletion removes everything Shardgate put into the cluster (reconciler_delete.go).
type Reconciler struct {
	Client client.Client
	Access clusteraccess.Access
	// SecretReader reads the cluster's issued certificate Secret in the seed, uncached (Shardgate
	// may get Secrets, never list or watch them across the seed). Nil: routers keep what they have.
	SecretReader client.Reader
	// CertificateNamespace is where the issued certificates are (Shardgate's; "": routers keep
	// what they have).
	CertificateNamespace string
	Clock                clock.PassiveClock
	// Canary renders every shard's canary route (the canary controller checks them).
	Canary bool
	// Board takes ShardsAvailable, RoutesProtected and GatewayAPIAvailable (cistatus.Shards);
	// CleanupPending, while
	// the cluster is being cleaned up, is written at once.
	Board *cistatus.Board
}

// Reconcile renders, applies, prunes, and reports.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	if ci.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, ci)
	}
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer) {
		patch := client.MergeFrom(ci.DeepCopy())
		controllerutil.AddFinalizer(ci, v1alpha1.UserClusterCleanupFinalizer)
		if err := r.Client.Patch(ctx, ci, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	conds, err := r.reconcileShards(ctx, ci)
	for _, c := range conds {
		c.ObservedGeneration = ci.Generation
		meta.SetStatusCondition(&ci.Status.Conditions, c)
	}
	r.Board.Post(ctx, ci, cistatus.Shards)
	return ctrl.Result{}, err
}

// reconcileShards returns ShardsAvailable and, once the cluster is observed, RoutesProtected and
// GatewayAPIAvailable.
func (r *Reconciler) reconcileShards(ctx context.Context, ci *v1alpha1.ClusterIngress) ([]metav1.Condition, error) {
	available := func(s metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{condition(v1alpha1.ConditionShardsAvailable, s, reason, msg)}
	}
	shards := ci.Shards()
	if errs := validation.Shards(shards, field.NewPath("spec", "shards")); len(errs) > 0 {
		return available(metav1.ConditionFalse, v1alpha1.ReasonShardsInvalid, errs.ToAggregate().Error()), nil
	}
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		// Nothing is touched while the cluster cannot be observed.
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "waiting for the user cluster to be reachable"), nil
	}
	domain := ci.Status.Domain
	if domain == "" {
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "waiting for the cluster domain (see DNSPublished)"), nil
	}
	user, err := cluster.Identity(ctx)
	if err != nil {
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	caps := cluster.Capabilities()
	tls, err := r.tlsInput(ctx, ci, cluster, r.now())
	if err != nil {
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	vips, err := vipInputs(ctx, cluster.Reader(), ci, shards)
	if err != nil {
		err = clusteraccess.DescribeError("read the user cluster's cache", err)
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	// Tenants' listeners that cannot be read are not rendered away: nothing is applied.
	lsInput, err := listenerSets(ctx, cluster, shards, domain)
	if err != nil {
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	listeners := listenersets.Decide(lsInput)
	desired, err := render.RenderDesired(render.DesiredInput{ClusterDomain: domain, TTL: ci.Spec.DNS.TTL, Shards: shards,
		ShardgateUser: user, AdmissionPolicy: caps.AdmissionPolicy, TLS: tls, VIP: vips, Canary: r.Canary && !ci.Spec.Canary.Disabled,
		RouteKinds: cluster.RouteKinds(), GatewayAPI: caps.GatewayAPI.RoutersServe(),
		ListenerSets: caps.GatewayAPI.ListenerSet, LoadStates: predicates.LoadStates(ci),
		ChangingTo: changingTo(ci), Listeners: listeners.Listeners, Grants: listeners.Grants})
	if err != nil {
		return available(metav1.ConditionFalse, v1alpha1.ReasonShardsInvalid, err.Error()), nil
	}
	w := cluster.Writer()
	var roleProblem []metav1.Condition
	applyOne := func(o *unstructured.Unstructured) error {
		same, err := upToDate(ctx, cluster.Reader(), w.Scheme(), o)
		role := roleAsRendered
		if err == nil && !same && o.GetKind() == "ClusterRole" {
			role, err = readRouterRole(ctx, cluster.Reader(), o)
			same = role == roleAsRendered
		}
		if err != nil {
			return clusteraccess.DescribeError("read the user cluster's cache", err)
		}
		if same {
			return nil
		}
		err = apply(ctx, w, o)
		if o.GetKind() == "ClusterRole" && apierrors.IsForbidden(err) {
			// The least-privilege role may only bind the router roles: the cluster admin creates
			// them. The other objects are still applied; the condition says what is missing.
			if roleProblem == nil {
				reason, msg := routerRoleProblem(role, o.GetName())
				roleProblem = available(metav1.ConditionFalse, reason, msg)
			}
			return nil
		}
		return clusteraccess.DescribeError(fmt.Sprintf("apply %s %s", o.GetKind(), o.GetName()), err)
	}
	failed, err := applyDesired(desired, applyOne)
	if err != nil {
		return available(metav1.ConditionFalse, v1alpha1.ReasonShardsApplyFailed, err.Error()), err
	}
	// A shard that failed keeps what it has running: its rendered objects are desired, and the
	// live objects of one that could not be rendered are kept by its label.
	if err := r.prune(ctx, cluster, desired.All(), unrendered(desired)); err != nil {
		return available(metav1.ConditionFalse, v1alpha1.ReasonShardsApplyFailed, err.Error()), err
	}
	classPolicy := v1alpha1.ResolveIngressClass(ci.Spec.IngressClass).Default
	if err := r.defaultClass(ctx, cluster, shards, classPolicy); err != nil {
		return available(metav1.ConditionFalse, v1alpha1.ReasonShardsApplyFailed, err.Error()), err
	}
	ungranted := applyTenants(desired, func(o *unstructured.Unstructured) error {
		return applyTenantObject(ctx, cluster, o, applyOne)
	})
	// Told once what they ask for is applied, and what became of it; a failed write is retried
	// (the pass' error), and nothing else waits for it.
	tellErr := tellListenerSets(ctx, cluster, lsInput.Sets, listenersets.Decide(told(ctx, cluster, lsInput, failed, ungranted)),
		metav1.NewTime(r.now()))
	if len(failed) > 0 {
		err := failureError(shards, failed)
		return append([]metav1.Condition{condition(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse,
			v1alpha1.ReasonShardsApplyFailed, err.Error())}, fromCapabilities(caps)...), err
	}
	if roleProblem != nil {
		return append(roleProblem, fromCapabilities(caps)...), tellErr
	}
	obs, err := observeRouters(ctx, cluster.Reader(), shards)
	if err != nil {
		err = clusteraccess.DescribeError("read the user cluster's cache", err)
		return available(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	return append([]metav1.Condition{Availability(shards, obs)}, fromCapabilities(caps)...), tellErr
}

// fromCapabilities are the conditions of what the cluster's engagement found it offers:
// RoutesProtected and GatewayAPIAvailable.
func fromCapabilities(caps clusteraccess.Capabilities) []metav1.Condition {
	return []metav1.Condition{Protection(caps), GatewayAPIAvailable(caps.GatewayAPI)}
}

// Protection is RoutesProtected for a cluster with these capabilities.
func Protection(caps clusteraccess.Capabilities) metav1.Condition {
	if caps.AdmissionPolicy {
		return condition(v1alpha1.ConditionRoutesProtected, metav1.ConditionTrue, v1alpha1.ReasonPolicyInstalled,
			"a ValidatingAdmissionPolicy lets only Shardgate set the shard label and allocation annotations")
	}
	return condition(v1alpha1.ConditionRoutesProtected, metav1.ConditionFalse, v1alpha1.ReasonPolicyUnsupported,
		fmt.Sprintf("the user cluster (Kubernetes %s) does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (1.30+): "+
			"allocation works, but users could set the shard label and allocation annotations themselves", orUnknown(caps.Version)))
}

func orUnknown(v string) string {
	if v == "" {
		return "version unknown"
	}
	return v
}

// prune deletes managed objects that are not desired (all of them when desired is empty), except
// those of the shards in keep.
func (r *Reconciler) prune(ctx context.Context, cluster clusteraccess.Cluster, desired []*unstructured.Unstructured, keep map[string]bool) error {
	want := map[string]bool{}
	for _, o := range desired {
		want[render.ObjKey(o.GetKind(), o.GetNamespace(), o.GetName())] = true
	}
	kinds, err := prunableKinds(cluster.Writer().Scheme(), cluster.Capabilities(), cluster.RouteKinds())
	if err != nil {
		return err
	}
	for _, kind := range kinds {
		list := kind.list.DeepCopyObject().(client.ObjectList)
		opts := []client.ListOption{client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}}
		if kind.namespace != "" {
			opts = append(opts, client.InNamespace(kind.namespace))
		}
		if err := cluster.Reader().List(ctx, list, opts...); err != nil {
			return clusteraccess.DescribeError("list "+kind.kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			o := item.(client.Object)
			if want[render.ObjKey(kind.kind, o.GetNamespace(), o.GetName())] || keep[o.GetLabels()[v1alpha1.ShardLabel]] || o.GetDeletionTimestamp() != nil {
				continue
			}
			if kind.kind == "ReferenceGrant" && o.GetName() != render.ListenerGrantName {
				continue // in a tenant's namespace, only Shardgate's own name is ever its
			}
			if _, applied := o.GetAnnotations()[render.AppliedHashAnnotation]; kind.kind == "ClusterRole" && !applied {
				continue // a router role the cluster admin created (config/user-cluster/rbac.yaml) stays theirs
			}
			log.FromContext(ctx).Info("pruning", "kind", kind.kind, "namespace", o.GetNamespace(), "name", o.GetName())
			if err := cluster.Writer().Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return clusteraccess.DescribeError(fmt.Sprintf("prune %s %s", kind.kind, o.GetName()), err)
			}
		}
	}
	return nil
}

// defaultClassManager is the field manager of the default-class mark, apart from everything
// else Shardgate applies: an administrator who edits the mark takes it over, and Shardgate's
// main applies never put it back.
const defaultClassManager = "shardgate-default-class"

// defaultClass marks the class of the first shard's flavour as the cluster's default, or releases
// the mark, as DecideDefaultClass says.
func (r *Reconciler) defaultClass(ctx context.Context, cluster clusteraccess.Cluster, shards []v1alpha1.ShardSpec,
	policy v1alpha1.DefaultClassPolicy) error {
	classes := &networkingv1.IngressClassList{}
	if err := cluster.Reader().List(ctx, classes); err != nil {
		return clusteraccess.DescribeError("list IngressClasses", err)
	}
	action, class := ingressclass.DecideDefaultClass(classes.Items, render.IngressClassNames(),
		render.DefaultIngressClass(shards), policy)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("IngressClass"))
	u.SetName(class)
	switch action {
	case ingressclass.DefaultClassMark:
		u.SetAnnotations(map[string]string{ingressclass.DefaultClassAnnotation: "true", ingressclass.DefaultClassMarker: "true"})
		log.FromContext(ctx).Info("no IngressClass is the cluster's default: marking Shardgate's default", "class", class)
	case ingressclass.DefaultClassRelease:
		// An apply with no fields gives up what this manager owned; fields an administrator
		// took over stay.
		log.FromContext(ctx).Info("releasing the default-class mark (ingressClass.default: Never)", "class", class)
	default:
		return nil
	}
	if err := cluster.Writer().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(defaultClassManager)); err != nil {
		return clusteraccess.DescribeError("mark the default IngressClass", err)
	}
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func condition(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
}

func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
	})
}

// changingTo are the flavours the cluster's held flavour changes will give its shards.
func changingTo(ci *v1alpha1.ClusterIngress) []v1alpha1.Flavour {
	var out []v1alpha1.Flavour
	for _, c := range ci.FlavourChanges() {
		out = append(out, c.To)
	}
	return out
}
