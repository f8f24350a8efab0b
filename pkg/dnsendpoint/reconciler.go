package dnsendpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// Reconciler keeps one DNSEndpoint per ClusterIngress (same namespace and name) with the
// cluster's wildcard and apex records, and reports on the ClusterIngress' status.
type Reconciler struct {
	Client  client.Client
	Engager *usercluster.Engager
	Clock   clock.PassiveClock
}

// Reconcile fetches, decides (Desired), writes only on change, and patches status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ci.DeletionTimestamp != nil {
		return ctrl.Result{}, r.reconcileDelete(ctx, ci)
	}
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.DNSCleanupFinalizer) {
		patch := client.MergeFrom(ci.DeepCopy())
		controllerutil.AddFinalizer(ci, v1alpha1.DNSCleanupFinalizer)
		if err := r.Client.Patch(ctx, ci, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := ci.Status.DeepCopy()
	err := r.reconcileDNS(ctx, ci)
	summarize(ci)
	if err == nil {
		ci.Status.ObservedGeneration = ci.Generation
	}
	if !equality.Semantic.DeepEqual(before, &ci.Status) {
		if perr := r.patchStatus(ctx, ci, before); perr != nil {
			return ctrl.Result{}, errors.Join(err, perr)
		}
	}
	return ctrl.Result{}, err
}

// reconcileDNS fills ci.Status and writes the DNSEndpoint. Bad configuration ends in a condition
// and a nil error (nothing to retry until the input changes).
func (r *Reconciler) reconcileDNS(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	key := client.ObjectKeyFromObject(ci)
	setReachable(ci, r.Engager, key)

	zone, err := dnsname.NormalizeZone(ci.Spec.DNS.Zone)
	if err != nil {
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonInvalidZone, err.Error())
		return nil
	}
	domain, err := dnsname.Domain(ci.Spec.ClusterID, zone)
	if err != nil {
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonInvalidClusterID, err.Error())
		return nil
	}
	settings, err := settingsFrom(ci.Spec.DNS)
	if err != nil {
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonProfileInvalid, err.Error())
		return nil
	}
	winner, err := r.idOwner(ctx, ci)
	if err != nil {
		return err
	}
	current, err := r.currentEndpoint(ctx, key)
	if err != nil {
		return err
	}
	if winner != key {
		// The older cluster keeps the ID; this one must not publish the same names.
		ci.Status.ClusterID, ci.Status.Domain = "", ""
		if current != nil {
			if err := r.deleteEndpoint(ctx, current); err != nil {
				return err
			}
		}
		ci.Status.DNSEndpointRef, ci.Status.Targets, ci.Status.TargetsSummary = "", nil, ""
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict,
			fmt.Sprintf("cluster ID %q is already used by the older cluster %s; set annotation %s to a unique ID", ci.Spec.ClusterID, winner, v1alpha1.ClusterIDAnnotation))
		return nil
	}
	ci.Status.ClusterID, ci.Status.Domain = ci.Spec.ClusterID, domain
	if current != nil {
		ci.Status.DNSEndpointRef = current.Name
		setTargets(ci, targetsOf(current.Spec.Endpoints))
	}

	cluster, engaged := r.Engager.Get(key)
	var nodes []corev1.Node
	if engaged {
		nodes, err = cluster.Nodes(ctx)
	}
	if !engaged || err != nil || cluster.State().Phase != usercluster.PhaseReachable {
		// Never wipe DNS because Shardgate cannot see: the last records stay as they are.
		if current != nil {
			setPublished(ci, metav1.ConditionTrue, v1alpha1.ReasonStaleRecordsKept,
				"the user cluster cannot be observed; the last published records are kept")
		} else {
			setPublished(ci, metav1.ConditionFalse, connectingOrUnreachable(engaged),
				"waiting to observe the user cluster's nodes")
		}
		return nil
	}

	var currentSpec []Endpoint
	if current != nil {
		currentSpec = current.Spec.Endpoints
	}
	shards := ci.Spec.Shards
	if len(shards) == 0 {
		shards = v1alpha1.ResolveShards(nil)
	}
	inputs, replicas, err := shardInputs(ctx, cluster.Reader(), domain, shards, nodes)
	if err != nil {
		return err
	}
	plan := Desired(Input{Shards: inputs, Settings: settings, Current: currentSpec})
	ci.Status.ReadyNodes = plan.ReadyNodes
	ci.Status.ReadyNodeCount = int32(len(plan.ReadyNodes))
	ci.Status.Shards = nil
	for _, sp := range plan.Shards {
		ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: sp.Name, Domain: sp.Domain,
			ReadyReplicas: replicas[sp.Name], ReadyNodes: sp.ReadyNodes, Targets: sp.Targets})
	}
	readyIngressNodes.WithLabelValues(key.String()).Set(float64(len(plan.ReadyNodes)))
	pending := cluster.TakePendingChange()
	wrote, err := r.apply(ctx, ci, current, plan.Endpoints)
	if err != nil {
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonDNSWriteFailed, err.Error())
		return err
	}
	if wrote {
		log.FromContext(ctx).Info("DNSEndpoint written", "domain", domain, "targets", plan.Targets, "keptLast", plan.KeptLast)
		now := r.Clock.Now()
		ci.Status.LastPublishedTime = &metav1.Time{Time: now}
		if !pending.IsZero() {
			convergence.Observe(now.Sub(pending).Seconds())
		}
	}
	ci.Status.DNSEndpointRef = ci.Name
	setTargets(ci, plan.Targets)
	switch {
	case plan.KeptLast:
		setPublished(ci, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets,
			"a shard has no ready target; its last published targets are kept (emptyTargets: KeepLast): "+strings.Join(keptShards(plan), ", "))
	case len(plan.Endpoints) == 0:
		setPublished(ci, metav1.ConditionFalse, v1alpha1.ReasonNoReadyNodes, "no ingress node is ready; no records are published")
	default:
		setPublished(ci, metav1.ConditionTrue, v1alpha1.ReasonPublished,
			fmt.Sprintf("%d shard(s) published; %d ready ingress node(s)", len(plan.Shards), len(plan.ReadyNodes)))
	}
	return nil
}

// apply creates or updates the DNSEndpoint when its spec differs from want; it reports whether
// it wrote.
func (r *Reconciler) apply(ctx context.Context, ci *v1alpha1.ClusterIngress, current *DNSEndpoint, want []Endpoint) (bool, error) {
	if current != nil && Equal(current.Spec.Endpoints, want) {
		return false, nil
	}
	if current == nil {
		if len(want) == 0 {
			return false, nil
		}
		ep := &DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ci.Namespace, Name: ci.Name,
			Labels: map[string]string{v1alpha1.ClusterIngressLabel: ci.Name}}}
		ep.SetGroupVersionKind(GroupVersion.WithKind("DNSEndpoint"))
		ep.Spec.Endpoints = want
		if err := controllerutil.SetControllerReference(ci, ep, r.Client.Scheme()); err != nil {
			return false, err
		}
		if err := r.Client.Create(ctx, ep, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
			return false, fmt.Errorf("create DNSEndpoint: %w", err)
		}
		dnsWrites.WithLabelValues("create").Inc()
		return true, nil
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Endpoints = want
	if err := r.Client.Patch(ctx, current, patch, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		return false, fmt.Errorf("update DNSEndpoint: %w", err)
	}
	dnsWrites.WithLabelValues("update").Inc()
	return true, nil
}

func (r *Reconciler) currentEndpoint(ctx context.Context, key types.NamespacedName) (*DNSEndpoint, error) {
	ep := &DNSEndpoint{}
	if err := r.Client.Get(ctx, key, ep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return ep, nil
}

func (r *Reconciler) deleteEndpoint(ctx context.Context, ep *DNSEndpoint) error {
	if err := r.Client.Delete(ctx, ep); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DNSEndpoint: %w", err)
	}
	dnsWrites.WithLabelValues("delete").Inc()
	return nil
}

func (r *Reconciler) patchStatus(ctx context.Context, ci *v1alpha1.ClusterIngress, before *v1alpha1.ClusterIngressStatus) error {
	old := ci.DeepCopy()
	old.Status = *before
	// Optimistic lock: the shard controller writes other conditions of the same status; a merge
	// patch replaces the whole list, so it must never be based on a stale read.
	return r.Client.Status().Patch(ctx, ci, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldOwner))
}

// settingsFrom converts resolved DNS settings for Desired.
func settingsFrom(d v1alpha1.DNSSettings) (Settings, error) {
	s := Settings{TTL: d.TTL, EmptyTargets: d.EmptyTargets}
	for _, t := range d.AddressTypes {
		s.AddressTypes = append(s.AddressTypes, corev1.NodeAddressType(t))
	}
	for _, f := range d.IPFamilies {
		switch f {
		case v1alpha1.IPv4:
			s.IPv4 = true
		case v1alpha1.IPv6:
			s.IPv6 = true
		}
	}
	if d.IngressNodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(d.IngressNodeSelector)
		if err != nil {
			return s, fmt.Errorf("dns.ingressNodeSelector: %w", err)
		}
		s.IngressNodes = sel
	} else {
		s.IngressNodes = labels.Everything()
	}
	return s, nil
}

func setTargets(ci *v1alpha1.ClusterIngress, t []string) {
	ci.Status.Targets = t
	ci.Status.TargetsSummary = strings.Join(t, ",")
}

func setPublished(ci *v1alpha1.ClusterIngress, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&ci.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionDNSPublished, Status: s,
		Reason: reason, Message: msg, ObservedGeneration: ci.Generation})
}

// setReachable reports the engager's view of the cluster as ClusterReachable.
func setReachable(ci *v1alpha1.ClusterIngress, e *usercluster.Engager, key types.NamespacedName) {
	cond := metav1.Condition{Type: v1alpha1.ConditionClusterReachable, ObservedGeneration: ci.Generation}
	if b, ok := e.Blocked(key); ok {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, b.Reason, b.Message
	} else if c, ok := e.Get(key); !ok {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, v1alpha1.ReasonConnecting, "not engaged yet"
	} else {
		st := c.State()
		switch st.Phase {
		case usercluster.PhaseReachable:
			cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonReachable
			cond.Message = "API server answers and the cache is synced"
		case usercluster.PhaseUnreachable:
			cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonUnreachable
			cond.Message = fmt.Sprintf("since %s: %s", st.Since.UTC().Format(time.RFC3339), st.Message)
		default:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, v1alpha1.ReasonConnecting, st.Message
		}
	}
	meta.SetStatusCondition(&ci.Status.Conditions, cond)
}

// summarize sets Ready from ClusterReachable and DNSPublished.
func summarize(ci *v1alpha1.ClusterIngress) {
	reach := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionClusterReachable)
	pub := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished)
	shards := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionShardsAvailable)
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		Message: "DNS follows the cluster's ready ingress nodes", ObservedGeneration: ci.Generation}
	switch {
	case reach == nil || reach.Status != metav1.ConditionTrue:
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotReady
		ready.Message = "ClusterReachable is not True"
		if reach != nil {
			ready.Message += ": " + reach.Reason
		}
	case shards != nil && shards.Status != metav1.ConditionTrue:
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotReady
		ready.Message = "ShardsAvailable is not True: " + shards.Reason
	case pub == nil || pub.Status != metav1.ConditionTrue || pub.Reason != v1alpha1.ReasonPublished:
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotReady
		ready.Message = "DNS is not published for ready nodes"
		if pub != nil {
			ready.Message += ": " + pub.Reason
		}
	}
	meta.SetStatusCondition(&ci.Status.Conditions, ready)
}

// connectingOrUnreachable is the DNSPublished reason while nothing is published yet and the
// cluster cannot be observed.
func connectingOrUnreachable(engaged bool) string {
	if engaged {
		return v1alpha1.ReasonUnreachable
	}
	return v1alpha1.ReasonConnecting
}

func keptShards(p Plan) []string {
	var out []string
	for _, s := range p.Shards {
		if s.KeptLast {
			out = append(out, s.Name)
		}
	}
	return out
}
