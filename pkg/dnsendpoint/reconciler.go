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
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/usercluster"
)

// Reconciler keeps one DNSEndpoint per ClusterIngress (same namespace and name) with the
// cluster's wildcard and apex records, and reports on the ClusterIngress' status.
type Reconciler struct {
	Client  client.Client
	Engager *usercluster.Engager
	// ServedZones are the zones the seed's external-dns publishes (empty: any).
	ServedZones []string
	Clock       clock.PassiveClock
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
// and a nil error (nothing to retry until the input changes); none of it touches the records.
func (r *Reconciler) reconcileDNS(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	key := client.ObjectKeyFromObject(ci)
	setReachable(ci, r.Engager, key)

	zone, err := dnsname.NormalizeZone(ci.Spec.DNS.Zone)
	if err != nil {
		setPublished(ci, v1alpha1.ReasonInvalidZone, err)
		return nil
	}
	if !zoneServed(zone, r.ServedZones) {
		setPublishedStatus(ci, metav1.ConditionFalse, v1alpha1.ReasonZoneNotServed,
			fmt.Sprintf("zone %s is not one the seed's external-dns publishes (%s); records would never reach DNS", zone, strings.Join(r.ServedZones, ", ")))
		return nil
	}
	domain, err := dnsname.Domain(ci.Spec.ClusterID, zone)
	if err != nil {
		reason := v1alpha1.ReasonInvalidClusterID
		if errors.Is(err, dnsname.ErrTooLong) {
			reason = v1alpha1.ReasonNamesTooLong
		}
		setPublished(ci, reason, err)
		return nil
	}
	shards := ci.Spec.Shards
	if len(shards) == 0 {
		shards = v1alpha1.ResolveShards(nil)
	}
	for _, s := range shards {
		if err := dnsname.CheckDomain(names.ShardDomain(s.Name, domain)); err != nil {
			setPublished(ci, v1alpha1.ReasonNamesTooLong, fmt.Errorf("shard %s: %w", s.Name, err))
			return nil
		}
	}
	settings, err := settingsFrom(ci.Spec.DNS)
	if err != nil {
		setPublished(ci, v1alpha1.ReasonProfileInvalid, err)
		return nil
	}
	holder, err := r.domainHolder(ctx, ci, domain)
	if err != nil {
		return err
	}
	if holder != key {
		// Another cluster holds these names. This one publishes nothing new and touches no
		// records: neither the holder's nor the ones it may hold under an earlier ID.
		setPublishedStatus(ci, metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict,
			fmt.Sprintf("cluster ID %q in zone %s is held by the cluster %s; set annotation %s to a unique ID", ci.Spec.ClusterID, zone, holder, v1alpha1.ClusterIDAnnotation))
		return nil
	}
	current, err := r.currentEndpoint(ctx, key)
	if err != nil {
		return err
	}
	if current != nil && ci.Status.Domain == domain {
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
			setPublishedStatus(ci, metav1.ConditionTrue, v1alpha1.ReasonStaleRecordsKept,
				"the user cluster cannot be observed; the last published records are kept")
		} else {
			setPublishedStatus(ci, metav1.ConditionFalse, connectingOrUnreachable(engaged),
				"waiting to observe the user cluster's nodes")
		}
		return nil
	}
	ci.Status.ClusterID, ci.Status.Domain = ci.Spec.ClusterID, domain

	var currentSpec []Endpoint
	if current != nil {
		currentSpec = current.Spec.Endpoints
	}
	inputs, replicas, err := shardInputs(ctx, cluster.Reader(), domain, shards, nodes)
	if err != nil {
		return usercluster.DescribeError("read the user cluster's cache", err)
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
		setPublished(ci, v1alpha1.ReasonDNSWriteFailed, err)
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
		setPublishedStatus(ci, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets,
			"a shard has no ready target; its last published targets are kept (emptyTargets: KeepLast): "+strings.Join(keptShards(plan), ", "))
	case len(plan.Endpoints) == 0:
		setPublishedStatus(ci, metav1.ConditionFalse, v1alpha1.ReasonNoReadyNodes, "no ingress node is ready; no records are published")
	default:
		setPublishedStatus(ci, metav1.ConditionTrue, v1alpha1.ReasonPublished,
			fmt.Sprintf("%d shard(s) published; %d ready ingress node(s)", len(plan.Shards), len(plan.ReadyNodes)))
	}
	return nil
}

// zoneServed reports whether zone is, or is under, one of the zones the seed's external-dns
// publishes. No list, or "*", serves everything.
func zoneServed(zone string, served []string) bool {
	if len(served) == 0 {
		return true
	}
	for _, s := range served {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if s == "*" || zone == s || strings.HasSuffix(zone, "."+s) {
			return true
		}
	}
	return false
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
		ep := &DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ci.Namespace, Name: ci.Name}}
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

// setPublished reports a problem that keeps the records as they are.
func setPublished(ci *v1alpha1.ClusterIngress, reason string, err error) {
	setPublishedStatus(ci, metav1.ConditionFalse, reason, err.Error())
}

func setPublishedStatus(ci *v1alpha1.ClusterIngress, s metav1.ConditionStatus, reason, msg string) {
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
			cond.Status, cond.Reason = metav1.ConditionFalse, unreachableReason(usercluster.Failure(st.Reason))
			cond.Message = fmt.Sprintf("since %s: %s", st.Since.UTC().Format(time.RFC3339), st.Message)
		default:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, v1alpha1.ReasonConnecting, st.Message
		}
	}
	meta.SetStatusCondition(&ci.Status.Conditions, cond)
}

// unreachableReason is the ClusterReachable reason for a failure kind.
func unreachableReason(f usercluster.Failure) string {
	switch f {
	case usercluster.FailureCredentials:
		return v1alpha1.ReasonCredentialsRefused
	case usercluster.FailureServer:
		return v1alpha1.ReasonServerError
	}
	return v1alpha1.ReasonUnreachable
}

// summarize sets Ready from the other conditions: the cluster's source exists, it is
// reachable, its shards have ready routers, and its records are published for ready nodes.
func summarize(ci *v1alpha1.ClusterIngress) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady,
		Message: "DNS follows the cluster's ready ingress nodes", ObservedGeneration: ci.Generation}
	notReady := func(what string, c *metav1.Condition) {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1alpha1.ReasonNotReady, what+" is not True"
		if c != nil {
			ready.Message += ": " + c.Reason
		}
	}
	find := func(typ string) *metav1.Condition { return meta.FindStatusCondition(ci.Status.Conditions, typ) }
	source, reach, shards, pub := find(v1alpha1.ConditionSourceAvailable), find(v1alpha1.ConditionClusterReachable),
		find(v1alpha1.ConditionShardsAvailable), find(v1alpha1.ConditionDNSPublished)
	switch {
	case source != nil && source.Status != metav1.ConditionTrue:
		notReady("SourceAvailable", source)
	case reach == nil || reach.Status != metav1.ConditionTrue:
		notReady("ClusterReachable", reach)
	case shards != nil && shards.Status != metav1.ConditionTrue:
		notReady("ShardsAvailable", shards)
	case pub == nil || pub.Status != metav1.ConditionTrue || pub.Reason != v1alpha1.ReasonPublished:
		notReady("DNSPublished (for ready nodes)", pub)
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
