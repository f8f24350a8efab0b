package dns

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/clusterid"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// Reconciler keeps one DNSEndpoint per ClusterIngress (same namespace and name) with the
// cluster's wildcard and apex records for the domain it holds (status.domain, decided by the
// identity controller), and reports ClusterReachable, DNSPublished, targets and shards
// (cistatus.DNS). Gather, Decide, apply.
type Reconciler struct {
	Client client.Client
	Access clusteraccess.Access
	// ServedZones are the zones the seed's external-dns publishes (empty: any).
	ServedZones []string
	Clock       clock.PassiveClock
	// Verifier, when set, makes DNSPublished mean the zone's authoritative servers answer
	// exactly the desired targets (reason Propagating until they do).
	Verifier *Verifier
	// Board takes this controller's part of the status (cistatus.DNS).
	Board *cistatus.Board
	// DNSShares is how many seed external-dns instances share the DNSEndpoints (the chart's
	// externalDNS.shares): each DNSEndpoint is labelled with its share (dnsrecords.Share).
	DNSShares int

	// ownUpdates holds, per cluster, the generation its DNSEndpoint got from this controller's
	// last update. The watch event of that update is no cause to reconcile: the status it calls
	// for is already queued behind the others (statusAfterRecords), and reconciling at once would
	// put it ahead of them again. An edit by anyone else bumps the generation past it.
	ownUpdates sync.Map // types.NamespacedName → int64
	// identities holds, per cluster, the identity decision (predicates.IdentityKey) its last pass
	// acted on, read through the board before the decision was written: the watch event of that
	// write is no cause to reconcile again.
	identities sync.Map // types.NamespacedName → string
}

// actedOn: the last pass for key acted on the identity decision id.
func (r *Reconciler) actedOn(key types.NamespacedName, id string) bool {
	seen, ok := r.identities.Load(key)
	return ok && seen.(string) == id
}

// verifyAfterUpdate: with a Verifier, records just updated are checked at the authoritative
// servers this much later, by a reconcile queued behind the changes still to be published
// (verifyPriority). Their status is posted at once: the board's writer holds status writes while
// records wait (cistatus.Board.SetYield), so it no longer takes a second reconcile to write the
// records of a burst before any of its status.
const verifyAfterUpdate = time.Second

var verifyPriority = -100

// identityWait is when a cluster whose domain the identity controller has not decided on yet
// (its spec just changed, or the cluster just appeared) is looked at again: that controller does
// little more than a few indexed cache reads, so its decision is there by then.
const identityWait = time.Second

// firstStatusGrace is how long a new cluster's first status write waits while the cluster is
// still being contacted: most clusters answer within it, and their first status then says
// reachable and published at once instead of "connecting" first (a thousand clusters engaged at
// once: a thousand seed writes fewer). A cluster that fails or takes longer shows that.
const firstStatusGrace = 30 * time.Second

// Reconcile fetches, decides, writes the DNSEndpoint only on change, and posts its part of the
// status to the board (the status writer adds the others' and Ready).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			r.ownUpdates.Delete(req.NamespacedName)
			r.identities.Delete(req.NamespacedName)
		}
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
	r.Board.Overlay(ci)
	before := ci.Status.DeepCopy()
	requeue, undecided, err := r.reconcileDNS(ctx, ci)
	if undecided && err == nil {
		// Whether the cluster holds its domain is the identity controller's to say, and it decides
		// on every spec change; a look again shortly posts what follows from it (a new cluster's
		// first status written without the domain would cost a second write).
		return ctrl.Result{RequeueAfter: identityWait}, nil
	}
	if err == nil {
		ci.Status.ObservedGeneration = ci.Generation
	}
	if wait := r.firstStatusWait(before, ci); wait > 0 && err == nil {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.Board.Post(ctx, ci, cistatus.DNS)
	if requeue == verifyAfterUpdate {
		return ctrl.Result{RequeueAfter: requeue, Priority: &verifyPriority}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, err
}

// firstStatusWait is how much longer the first post of ci's status waits (firstStatusGrace): only
// while none was posted or written yet and the cluster is still being contacted. The status
// writer holds a cluster's first write until this controller's part is there.
func (r *Reconciler) firstStatusWait(before *v1alpha1.ClusterIngressStatus, ci *v1alpha1.ClusterIngress) time.Duration {
	if meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionClusterReachable) != nil {
		return 0
	}
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionClusterReachable); c == nil || c.Reason != v1alpha1.ReasonConnecting {
		return 0
	}
	return max(0, firstStatusGrace-r.Clock.Since(ci.CreationTimestamp.Time))
}

// reconcileDNS gathers what Decide needs, applies its decision to the DNSEndpoint and fills
// ci.Status; with a Verifier, it then checks the answers and says when to look again. Bad
// configuration ends in a condition and a nil error (nothing to retry until the input changes);
// none of it touches the records.
// Records just updated are not checked in the same pass (the servers cannot have them yet, and
// in a burst the check would hold a worker the next cluster's records need): DNSPublished says
// Propagating and the check follows verifyAfterUpdate later, queued behind the records.
func (r *Reconciler) reconcileDNS(ctx context.Context, ci *v1alpha1.ClusterIngress) (requeue time.Duration, undecided bool,
	err error) {
	var prev *metav1.Condition
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished); c != nil {
		prev = c.DeepCopy()
	}
	p, err := r.publish(ctx, ci)
	if err != nil || p.wait {
		return 0, p.wait, err
	}
	ci.Status.DNSVerifiedBy = nil
	switch {
	case r.Verifier == nil:
		requeue = p.settling
	case p.updated:
		r.propagating(ci, prev, "the DNSEndpoint was just updated")
		requeue = verifyAfterUpdate
	default:
		requeue = r.verify(ctx, ci, prev, p.records)
	}
	if p.settling > 0 && (requeue == 0 || p.settling < requeue) {
		requeue = p.settling
	}
	return requeue, false, nil
}

// verify checks published records at the zone's authoritative servers: DNSPublished stays
// Published only while they answer exactly the desired targets, else it is Propagating, saying
// since when and what differs. It returns when to check again: every second while propagating,
// every Verifier.Interval after (a record edited behind Shardgate's back shows within that).
func (r *Reconciler) verify(ctx context.Context, ci *v1alpha1.ClusterIngress, prev *metav1.Condition, records []dnsrecords.Endpoint) time.Duration {
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonPublished || len(records) == 0 {
		return 0
	}
	now := r.Clock.Now()
	wasPropagating := prev != nil && prev.Reason == v1alpha1.ReasonPropagating
	mismatch := r.Verifier.Check(ctx, records)
	if mismatch == "" {
		ci.Status.DNSVerifiedBy = append([]string(nil), r.Verifier.Servers...)
		c.Message = fmt.Sprintf("%s; the authoritative servers (%s) answer it", c.Message, strings.Join(r.Verifier.Servers, ", "))
		if wasPropagating {
			// From the write the servers did not answer yet (when Propagating began) to now.
			verification.Observe(now.Sub(prev.LastTransitionTime.Time).Seconds())
		}
		return r.Verifier.Interval
	}
	r.propagating(ci, prev, mismatch)
	return time.Second
}

// propagating says DNSPublished Propagating: the records are written, the authoritative servers
// do not answer them yet (since the first pass that saw so).
func (r *Reconciler) propagating(ci *v1alpha1.ClusterIngress, prev *metav1.Condition, mismatch string) {
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDNSPublished)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonPublished {
		return
	}
	now := r.Clock.Now()
	since := now
	if prev != nil && prev.Reason == v1alpha1.ReasonPropagating {
		since = prev.LastTransitionTime.Time
	}
	setCondition(ci, metav1.Condition{Type: v1alpha1.ConditionDNSPublished, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPropagating,
		LastTransitionTime: metav1.NewTime(since),
		Message:            fmt.Sprintf("the DNSEndpoint is written; waiting %s for the authoritative servers: %s", now.Sub(since).Round(time.Second), mismatch)})
}

// publication is what publish did.
type publication struct {
	// records the DNSEndpoint holds for a cluster that holds its domain.
	records []dnsrecords.Endpoint
	// updated: publish updated them (a first write does not count).
	updated bool
	// wait: the identity controller has not decided on the cluster's spec yet (Decide).
	wait bool
	// settling: a router is ready but not settled yet; it is published this much later.
	settling time.Duration
}

// publish is reconcileDNS without verification.
func (r *Reconciler) publish(ctx context.Context, ci *v1alpha1.ClusterIngress) (publication, error) {
	key := client.ObjectKeyFromObject(ci)
	cluster, engaged := r.Access.Get(key)
	var blocked *clusteraccess.State
	if b, ok := r.Access.Blocked(key); ok {
		blocked = &b
	}
	var state clusteraccess.State
	if engaged {
		state = cluster.State()
	}
	setCondition(ci, Reachable(blocked, engaged, state))

	// Label first, whatever the domain's state: records kept while the domain has a problem must
	// still pass external-dns' label filter, or its sync policy would delete them from the zone.
	current, err := r.currentEndpoint(ctx, key)
	if err != nil {
		return publication{}, err
	}
	if err := r.label(ctx, current); err != nil {
		return publication{}, err
	}
	domain, refused := clusterid.RequestedDomain(ci.Spec, r.ServedZones)
	yielded := assigned(ci) != nil && assigned(ci).Reason == v1alpha1.ReasonDomainYielded
	if refused != nil && !yielded { // a yield removes the cluster's copies whatever its spec says
		r.identities.Store(key, predicates.IdentityKey(ci)) // whatever the identity decides, this stands
		setCondition(ci, *published(metav1.ConditionFalse, refused.Reason, refused.Message))
		return publication{}, nil
	}
	in := Input{Domain: domain, Spec: ci.Spec, Held: domain != "" && ci.Status.Domain == domain, Assigned: assigned(ci),
		Engaged: engaged, CurrentExists: current != nil,
		Observed: engaged && cluster.Synced() && state.Phase == clusteraccess.PhaseReachable}
	if current != nil {
		in.Current = current.Spec.Endpoints
		if in.Held {
			ci.Status.DNSEndpointRef = current.Name
			setTargets(ci, dnsrecords.Targets(current.Spec.Endpoints))
		}
	}
	var settling time.Duration
	if in.Observed && in.Held { // only a held domain's records are planned from the nodes
		nodes, err := cluster.Nodes(ctx)
		if err != nil {
			return publication{}, clusteraccess.DescribeError("read the user cluster's cache", err)
		}
		in.Shards, in.Replicas, settling, err = shardInputs(ctx, cluster.Reader(), domain, ci.Shards(), nodes,
			ci.Status.VIPs, ci.Status.RoutedIPs, r.Clock.Now())
		if err != nil {
			return publication{}, clusteraccess.DescribeError("read the user cluster's cache", err)
		}
	}
	in.Settling = settling
	d := Decide(in)
	if d.Wait {
		return publication{wait: true}, nil
	}
	r.identities.Store(key, predicates.IdentityKey(ci))
	setCondition(ci, d.Published)
	if !d.Publish {
		return publication{}, nil
	}
	var pending time.Time
	if engaged { // a cluster that yields its domain is written for whether it is engaged or not
		pending = cluster.TakePendingChange()
	}
	updated := false
	if d.Write {
		if err := r.write(ctx, ci, current, d.Endpoints); err != nil {
			// status.shards stays what the DNSEndpoint holds: the identity reads from it which
			// domains this cluster's records are under, and a refused write moved none.
			setCondition(ci, *published(metav1.ConditionFalse, v1alpha1.ReasonDNSWriteFailed, err.Error()))
			return publication{}, err
		}
		log.FromContext(ctx).Info("DNSEndpoint written", "domain", domain, "targets", d.Plan.Targets, "keptLast", d.Plan.KeptLast)
		now := r.Clock.Now()
		ci.Status.LastPublishedTime = &metav1.Time{Time: now}
		if !pending.IsZero() {
			convergence.Observe(now.Sub(pending).Seconds())
		}
		updated = current != nil
	}
	r.recordPlan(ci, key, d.Plan, in.Replicas)
	if current != nil || d.Write {
		ci.Status.DNSEndpointRef = ci.Name
	}
	if ci.Status.LastPublishedTime == nil && current != nil {
		// The status write that recorded the first write was lost (a conflict): the DNSEndpoint's
		// creation is when it was first published.
		t := current.CreationTimestamp
		ci.Status.LastPublishedTime = &t
	}
	setTargets(ci, d.Plan.Targets)
	if !d.Write && current != nil {
		return publication{records: current.Spec.Endpoints, settling: settling}, nil
	}
	return publication{records: d.Endpoints, updated: updated, settling: settling}, nil
}

// recordPlan puts the per-shard outcome on status.
func (r *Reconciler) recordPlan(ci *v1alpha1.ClusterIngress, key types.NamespacedName, plan *dnsrecords.Plan, replicas map[string]int32) {
	ci.Status.ReadyNodes = plan.ReadyNodes
	ci.Status.ReadyNodeCount = int32(len(plan.ReadyNodes))
	ci.Status.Shards = nil
	flavours := map[string]string{}
	for _, s := range ci.Shards() {
		flavours[s.Name] = string(s.Flavour)
	}
	for _, sp := range plan.Shards {
		ci.Status.Shards = append(ci.Status.Shards, v1alpha1.ShardStatus{Name: sp.Name, Flavour: flavours[sp.Name],
			Domain: sp.Domain, ReadyReplicas: replicas[sp.Name], ReadyNodes: sp.ReadyNodes, Targets: sp.Targets,
			NodesLeftOut: sp.LeftOut, NodesLeftOutCount: int32(sp.LeftOutCount)})
	}
	readyIngressNodes.WithLabelValues(key.String()).Set(float64(len(plan.ReadyNodes)))
}

// write creates or updates the DNSEndpoint with want.
func (r *Reconciler) write(ctx context.Context, ci *v1alpha1.ClusterIngress, current *dnsrecords.DNSEndpoint, want []dnsrecords.Endpoint) error {
	if current == nil {
		ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ci.Namespace, Name: ci.Name,
			Labels: dnsrecords.EndpointLabels(ci.Namespace, ci.Name, r.DNSShares)}}
		ep.SetGroupVersionKind(dnsrecords.GroupVersion.WithKind("DNSEndpoint"))
		ep.Spec.Endpoints = want
		if err := controllerutil.SetControllerReference(ci, ep, r.Client.Scheme()); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, ep, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
			return fmt.Errorf("create DNSEndpoint: %w", err)
		}
		dnsWrites.WithLabelValues("create").Inc()
		return nil
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Endpoints = want
	key := client.ObjectKeyFromObject(current)
	// A spec change adds one to the generation; the watch event can come before the response.
	r.ownUpdates.Store(key, current.Generation+1)
	if err := r.Client.Patch(ctx, current, patch, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		r.ownUpdates.Delete(key)
		return fmt.Errorf("update DNSEndpoint: %w", err)
	}
	r.ownUpdates.Store(key, current.Generation)
	dnsWrites.WithLabelValues("update").Inc()
	return nil
}

// notOwnUpdate drops the watch event of the DNSEndpoint update this controller just made
// (ownUpdates); creation, deletion and anyone else's edit pass.
func (r *Reconciler) notOwnUpdate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		g, ok := r.ownUpdates.Load(client.ObjectKeyFromObject(e.ObjectNew))
		return !ok || g.(int64) != e.ObjectNew.GetGeneration()
	}}
}

// label puts shardgate.io/managed-by and the share on a DNSEndpoint written before Shardgate
// labelled them (or when the number of shares changed), whatever else this pass decides (the
// cluster may not be observable): the chart's external-dns publishes only labelled DNSEndpoints,
// and an unlabelled one's records would be deleted. A share move is a label change: the new
// share's external-dns takes the records over as they are (docs/operator-guide.md, Sizing).
func (r *Reconciler) label(ctx context.Context, current *dnsrecords.DNSEndpoint) error {
	if current == nil {
		return nil
	}
	want := dnsrecords.EndpointLabels(current.Namespace, current.Name, r.DNSShares)
	missing := false
	for k, v := range want {
		missing = missing || current.Labels[k] != v
	}
	if !missing {
		return nil
	}
	patch := client.MergeFrom(current.DeepCopy())
	for k, v := range want {
		metav1.SetMetaDataLabel(&current.ObjectMeta, k, v)
	}
	if err := r.Client.Patch(ctx, current, patch, client.FieldOwner(v1alpha1.FieldOwner)); err != nil {
		return fmt.Errorf("label DNSEndpoint: %w", err)
	}
	return nil
}

func (r *Reconciler) currentEndpoint(ctx context.Context, key types.NamespacedName) (*dnsrecords.DNSEndpoint, error) {
	ep := &dnsrecords.DNSEndpoint{}
	if err := r.Client.Get(ctx, key, ep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return ep, nil
}

// assigned is the identity controller's DomainAssigned when it decided on ci's current spec, nil
// before it has.
func assigned(ci *v1alpha1.ClusterIngress) *metav1.Condition {
	c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionDomainAssigned)
	if c == nil || c.ObservedGeneration != ci.Generation {
		return nil
	}
	return c
}

func setTargets(ci *v1alpha1.ClusterIngress, t []string) {
	ci.Status.Targets = t
	ci.Status.TargetsSummary = strings.Join(t, ",")
}

func setCondition(ci *v1alpha1.ClusterIngress, c metav1.Condition) {
	c.ObservedGeneration = ci.Generation
	meta.SetStatusCondition(&ci.Status.Conditions, c)
}
