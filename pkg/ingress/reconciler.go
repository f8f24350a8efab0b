package ingress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// Reconciler deploys every shard of a ClusterIngress into its user cluster with server-side
// apply, prunes the objects of removed shards, and repairs drift (the user-cluster cache wakes it
// on any change to a managed object). It reports ShardsAvailable.
type Reconciler struct {
	Client  client.Client
	Engager *usercluster.Engager
}

// Reconcile renders, applies, prunes, and reports.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ci.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	before := ci.DeepCopy()
	cond, err := r.reconcileShards(ctx, ci)
	cond.Type, cond.ObservedGeneration = v1alpha1.ConditionShardsAvailable, ci.Generation
	meta.SetStatusCondition(&ci.Status.Conditions, cond)
	if !equalConditions(before.Status.Conditions, ci.Status.Conditions) {
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if perr := r.Client.Status().Patch(ctx, ci, patch, client.FieldOwner(v1alpha1.FieldOwner)); perr != nil {
			return ctrl.Result{}, errors.Join(err, perr)
		}
	}
	return ctrl.Result{}, err
}

func (r *Reconciler) reconcileShards(ctx context.Context, ci *v1alpha1.ClusterIngress) (metav1.Condition, error) {
	shards := ci.Spec.Shards
	if len(shards) == 0 {
		shards = v1alpha1.ResolveShards(nil)
	}
	if errs := ValidateShards(shards, field.NewPath("spec", "shards")); len(errs) > 0 {
		return condition(metav1.ConditionFalse, v1alpha1.ReasonShardsInvalid, errs.ToAggregate().Error()), nil
	}
	cluster, ok := r.Engager.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		// Nothing is touched while the cluster cannot be observed.
		return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "waiting for the user cluster to be reachable"), nil
	}
	domain := ci.Status.Domain
	if domain == "" {
		return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "waiting for the cluster domain (see DNSPublished)"), nil
	}
	user, err := cluster.Identity(ctx)
	if err != nil {
		return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
	}
	desired, err := DesiredObjects(ci.Spec.ClusterID, domain, ci.Spec.DNS.TTL, shards, user)
	if err != nil {
		return condition(metav1.ConditionFalse, v1alpha1.ReasonShardsInvalid, err.Error()), nil
	}
	w := cluster.Writer()
	for _, o := range desired {
		same, err := upToDate(ctx, cluster.Reader(), w.Scheme(), o)
		if err != nil {
			return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
		}
		if same {
			continue
		}
		if err := w.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership); err != nil {
			msg := fmt.Sprintf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
			return condition(metav1.ConditionFalse, v1alpha1.ReasonShardsApplyFailed, msg), fmt.Errorf("%s", msg)
		}
	}
	if err := r.prune(ctx, cluster, desired); err != nil {
		return condition(metav1.ConditionFalse, v1alpha1.ReasonShardsApplyFailed, err.Error()), err
	}
	return availability(ctx, cluster.Reader(), shards)
}

// prune deletes managed objects that no shard renders any more.
func (r *Reconciler) prune(ctx context.Context, cluster usercluster.Cluster, desired []*unstructured.Unstructured) error {
	want := map[string]bool{}
	for _, o := range desired {
		want[objKey(o.GetKind(), o.GetNamespace(), o.GetName())] = true
	}
	for _, kind := range prunableKinds {
		list := kind.list()
		if err := cluster.Reader().List(ctx, list, client.MatchingLabels{ManagedByLabel: ManagedByValue}); err != nil {
			return fmt.Errorf("list %s: %w", kind.kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			o := item.(client.Object)
			if want[objKey(kind.kind, o.GetNamespace(), o.GetName())] || o.GetDeletionTimestamp() != nil {
				continue
			}
			log.FromContext(ctx).Info("pruning", "kind", kind.kind, "namespace", o.GetNamespace(), "name", o.GetName())
			if err := cluster.Writer().Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("prune %s %s: %w", kind.kind, o.GetName(), err)
			}
		}
	}
	return nil
}

// availability: every shard has at least one ready router; otherwise why not.
func availability(ctx context.Context, rd client.Reader, shards []v1alpha1.ShardSpec) (metav1.Condition, error) {
	var missing []string
	reason := v1alpha1.ReasonNoRouterReady
	for _, s := range shards {
		d := &appsv1.Deployment{}
		if err := rd.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: RouterName(s.Name)}, d); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, s.Name+": router not created yet")
				continue
			}
			return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
		}
		if d.Status.ReadyReplicas > 0 {
			continue
		}
		why, r, err := notReadyReason(ctx, rd, s)
		if err != nil {
			return condition(metav1.ConditionUnknown, v1alpha1.ReasonConnecting, err.Error()), err
		}
		if r != "" {
			reason = r
		}
		missing = append(missing, s.Name+": "+why)
	}
	if len(missing) > 0 {
		return condition(metav1.ConditionFalse, reason, strings.Join(missing, "; ")), nil
	}
	return condition(metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable, fmt.Sprintf("%d shard(s) have ready routers", len(shards))), nil
}

// notReadyReason explains a shard without a ready router from its nodes and pods.
func notReadyReason(ctx context.Context, rd client.Reader, s v1alpha1.ShardSpec) (string, string, error) {
	if len(s.NodeSelector) > 0 {
		nodes := &corev1.NodeList{}
		if err := rd.List(ctx, nodes); err != nil {
			return "", "", err
		}
		sel := labels.SelectorFromSet(s.NodeSelector)
		if !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return sel.Matches(labels.Set(n.Labels)) }) {
			return fmt.Sprintf("no node matches nodeSelector %s", sel), v1alpha1.ReasonNoNodeMatchesSelector, nil
		}
	}
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabels{ShardLabel: s.Name, ManagedByLabel: ManagedByValue}); err != nil {
		return "", "", err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return "pods unschedulable: " + c.Message, v1alpha1.ReasonPodsUnschedulable, nil
			}
		}
	}
	return "no router pod is ready yet", "", nil
}

// DesiredObjects renders the shared objects, every shard's objects, the users' info ConfigMap,
// and the admission policy that reserves allocation fields to shardgateUser.
func DesiredObjects(clusterID, clusterDomain string, ttl int64, shards []v1alpha1.ShardSpec, shardgateUser string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	sharedDone := map[v1alpha1.Flavour]bool{}
	for _, s := range shards {
		f, ok := FlavourFor(s.Flavour)
		if !ok {
			return nil, fmt.Errorf("shard %s: unknown flavour %q", s.Name, s.Flavour)
		}
		if !sharedDone[s.Flavour] {
			shared, err := SharedObjects(f)
			if err != nil {
				return nil, err
			}
			out = append(out, shared...)
			sharedDone[s.Flavour] = true
		}
		objs, err := f.Render(RenderInput{ClusterID: clusterID, Domain: ShardDomain(s.Name, clusterDomain), Shard: s, DNSTTL: ttl})
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", s.Name, err)
		}
		out = append(out, objs...)
	}
	info, err := UserInfo(clusterDomain, shards)
	if err != nil {
		return nil, err
	}
	policy, err := AdmissionPolicy(shardgateUser)
	if err != nil {
		return nil, err
	}
	return dedupe(append(append(out, info), policy...)), nil
}

// dedupe keeps the first of objects with the same kind and name (the shared ClusterRole is
// rendered once per shard).
func dedupe(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[string]bool{}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		k := objKey(o.GetKind(), o.GetNamespace(), o.GetName())
		if !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	return out
}

func objKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func condition(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Status: s, Reason: reason, Message: msg}
}

func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
	})
}
