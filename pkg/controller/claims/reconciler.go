package claims

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/claims"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Reconciler decides one user cluster's IngressClaims.
type Reconciler struct {
	Client   client.Client
	Access   clusteraccess.Access
	Recorder events.EventRecorder
	// ReclaimGrace is how long every Ingress a claim bound must stay gone before its reclaim
	// policy applies (an Ingress replaced with `kubectl replace --force` is gone for a moment).
	ReclaimGrace time.Duration
	// Clock dates when a claim's Ingresses were first seen gone (nil: the real clock).
	Clock clock.PassiveClock
	// Board takes status.claims (cistatus.Claims), written before the claims' own status.
	Board *cistatus.Board
}

// Reconcile gathers the cluster's claims, Ingresses and claimed routers' readiness, decides,
// deletes the claims reclaimed with policy Delete, writes status.claims (the seed's record: the
// claimed shards follow from it) and each claim's status. Nothing is decided while
// the cluster cannot be observed or before it has a domain.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	cluster, ok := r.Access.Get(req.NamespacedName)
	if ci.DeletionTimestamp != nil || !ok || !cluster.Observable() || !cluster.Capabilities().CRDs || ci.Status.Domain == "" {
		return ctrl.Result{}, nil
	}
	rd := cluster.Reader()
	list := &v1alpha1.IngressClaimList{}
	if err := rd.List(ctx, list); err != nil {
		return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's IngressClaims", err)
	}
	in := claims.Input{Settings: ci.Spec.Claims, Records: ci.Status.Claims, ClusterDomain: ci.Status.Domain,
		Ingresses: map[string]bool{}, HTTPRoutes: map[string]bool{}, GRPCRoutes: map[string]bool{},
		Ready: map[string]int32{}, HeldHosts: map[string]string{}, Now: r.now(), Grace: r.ReclaimGrace,
		DefaultFlavour: ci.Spec.DefaultFlavour()}
	caps := cluster.Capabilities()
	in.WhyUnclaimable = func(f v1alpha1.Flavour) string {
		why, _ := render.ClaimLimits(f, caps.AdmissionPolicy, caps.GatewayAPI.RoutersServe())
		return why
	}
	// A Gateway API kind is not bound where the claim's routers serve no Gateway API route, or
	// where the cluster does not serve the kind to Shardgate (its CRD, or its role, lacks it).
	whyNot := func(k routekinds.Kind) func(v1alpha1.Flavour) string {
		return func(f v1alpha1.Flavour) string {
			if _, why := render.ClaimLimits(f, caps.AdmissionPolicy, caps.GatewayAPI.RoutersServe()); why != "" {
				return why
			}
			if caps.Unserved[k.GroupVersionKind()] {
				return fmt.Sprintf("the cluster does not serve %ss to Shardgate (its condition GatewayAPIAvailable says why)",
					k.Name())
			}
			return ""
		}
	}
	in.WhyNoHTTPRoutes, in.WhyNoGRPCRoutes = whyNot(routekinds.HTTPRoute{}), whyNot(routekinds.GRPCRoute{})
	// Not listed here (not among the cluster's route kinds), yet not turned off on purpose:
	// admitted claims keep what they bound of the kind. A kind that is listed is read, whatever
	// its routers serve: a route gone from it is gone.
	in.Unreadable = map[string]bool{}
	if caps.GatewayAPI.Reason != v1alpha1.ReasonGatewayAPIDisabled {
		listed := cluster.RouteKinds()
		for _, k := range []routekinds.Kind{routekinds.HTTPRoute{}, routekinds.GRPCRoute{}} {
			isK := func(l routekinds.Kind) bool { return l.Name() == k.Name() }
			in.Unreadable[k.Name()] = !slices.ContainsFunc(listed, isK)
		}
	}
	for _, s := range ci.Spec.ShardsOrDefault() {
		in.ProfileShards = append(in.ProfileShards, s.Name)
	}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			in.Claims = append(in.Claims, claims.Claim{Namespace: c.Namespace, Name: c.Name, Generation: c.Generation, Created: c.CreationTimestamp.Time, Spec: c.Spec})
		}
	}
	// The routes matter only to claims that may bind (which Ingresses each binds, which hosts its
	// shard's domain would take): admitted ones, or new ones while claims are allowed. A cluster
	// without such is not listed on every change of a route, which allocating 10,000 Ingresses
	// makes 10,000 times.
	admitted := slices.ContainsFunc(ci.Status.Claims, func(rec v1alpha1.ClaimRecord) bool { return rec.Shard != "" })
	if len(in.Claims) > 0 && (ci.Spec.Claims.Allowed || admitted) {
		if err := r.routes(ctx, cluster, &in); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, rec := range ci.Status.Claims {
		if rec.Shard == "" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := rd.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(rec.Shard)}, d); err == nil {
			in.Ready[rec.Shard] = d.Status.ReadyReplicas
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
		}
	}
	out := claims.Decide(in)

	// Claims reclaimed with policy Delete go before their records: a record dropped first and a
	// delete that then failed left a claim with no record, admitted again as new on the next pass.
	w := cluster.Writer()
	deleted := map[string]bool{}
	for _, key := range out.Delete {
		deleted[key] = true
	}
	for i := range list.Items {
		c := &list.Items[i]
		if key := c.Namespace + "/" + c.Name; deleted[key] {
			log.FromContext(ctx).Info("IngressClaim reclaimed with policy Delete", "claim", key)
			// Only the claim this pass decided on: one edited since (say, to reclaimPolicy Retain)
			// or deleted and created again is decided again, its record kept meanwhile.
			err := w.Delete(ctx, c, client.Preconditions{UID: &c.UID, ResourceVersion: &c.ResourceVersion})
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			if client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, clusteraccess.DescribeError("delete IngressClaim "+key, err)
			}
		}
	}
	before := ci.Status.DeepCopy()
	ci.Status.Claims = out.Records
	if err := r.Board.Write(ctx, ci, cistatus.Claims); err != nil {
		return ctrl.Result{}, err
	}
	r.eventTransitions(ci, before.Claims, out.Records)
	// Shards past the certificate's 100 names: their claims say so (their routes get no trusted
	// certificate).
	var leftOut []string
	if ci.Spec.TLS.On() && ci.Status.Domain != "" {
		_, leftOut = certs.Names(ci.Status.Domain, ci.Shards())
	}
	records := make(map[string]v1alpha1.ClaimRecord, len(out.Records))
	for _, rec := range out.Records {
		records[rec.Namespace+"/"+rec.Name] = rec
	}
	for i := range list.Items {
		c := &list.Items[i]
		rec, ok := records[c.Namespace+"/"+c.Name]
		if !ok {
			continue
		}
		uncovered := rec.Shard != "" && slices.Contains(leftOut, rec.Shard)
		if err := writeStatus(ctx, w, c, rec, ci, in.Ready, uncovered); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Readiness of a new claimed shard shows in its Deployment; look again soon while any is
	// provisioning (the Deployment's status changes wake this controller too).
	for _, rec := range out.Records {
		if rec.Phase == v1alpha1.ClaimPending {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	// A reclaim grace running out changes nothing the cluster would report.
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, nil
}

// ConditionCertificateCovered is on an IngressClaim only while the cluster's certificate leaves
// its shard out (more shards than one certificate's 100 names).
const ConditionCertificateCovered = "CertificateCovered"

// writeStatus mirrors the record into the claim's status; uncovered: the claim's shard is past
// the names one certificate holds (condition CertificateCovered=False, NamesLeftOut).
func writeStatus(ctx context.Context, w client.Client, c *v1alpha1.IngressClaim, rec v1alpha1.ClaimRecord,
	ci *v1alpha1.ClusterIngress, ready map[string]int32, uncovered bool) error {
	st := *c.Status.DeepCopy()
	st.Phase, st.Shard, st.ReadyReplicas, st.Domain = rec.Phase, rec.Shard, ready[rec.Shard], ""
	st.BoundIngresses, st.BoundHTTPRoutes, st.BoundGRPCRoutes = rec.Ingresses, rec.HTTPRoutes, rec.GRPCRoutes
	st.BoundCount = int32(rec.Bound())
	st.Flavour, st.IngressClassName = "", ""
	if rec.Shard != "" {
		st.Domain = names.ShardDomain(rec.Shard, ci.Status.Domain)
		shard := v1alpha1.ClaimedShard(rec, ci.Spec.Claims, ci.Spec.DefaultFlavour())
		st.Flavour, st.IngressClassName = shard.Flavour, render.ShardClass(shard)
	}
	cond := metav1.Condition{Type: "Bound", Status: metav1.ConditionFalse, Reason: rec.Reason, Message: rec.Message, ObservedGeneration: c.Generation}
	if rec.Phase == v1alpha1.ClaimBound {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if uncovered {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionCertificateCovered, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonNamesLeftOut, ObservedGeneration: c.Generation,
			Message: fmt.Sprintf("the cluster's certificate holds at most %d names and this claim's shard is past them: its routes are served without a trusted certificate", certs.MaxNames)})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionCertificateCovered)
	}
	if equality.Semantic.DeepEqual(st, c.Status) {
		return nil
	}
	old := c.DeepCopy()
	c.Status = st
	if err := w.Status().Patch(ctx, c, client.MergeFrom(old)); err != nil && !apierrors.IsNotFound(err) {
		return clusteraccess.DescribeError("write IngressClaim "+c.Namespace+"/"+c.Name+"'s status", err)
	}
	return nil
}

// eventTransitions records on the ClusterIngress each claim's phase change.
func (r *Reconciler) eventTransitions(ci *v1alpha1.ClusterIngress, before, after []v1alpha1.ClaimRecord) {
	was := map[string]v1alpha1.ClaimPhase{}
	for _, c := range before {
		was[c.Namespace+"/"+c.Name] = c.Phase
	}
	for _, c := range after {
		key := c.Namespace + "/" + c.Name
		if was[key] == c.Phase {
			continue
		}
		typ := corev1.EventTypeNormal
		if c.Phase == v1alpha1.ClaimFailed {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(ci, nil, typ, "Claim"+string(c.Phase), "Claim", "IngressClaim %s: %s", key, c.Message)
	}
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// routes adds to in the routes that exist of each kind claims may name (spec.ingresses,
// spec.httpRoutes, spec.grpcRoutes; a Gateway API kind where the cluster serves it) and the hosts
// every route holds, whatever its kind: a host held by a route of one namespace is not another
// namespace's to claim.
func (r *Reconciler) routes(ctx context.Context, cluster clusteraccess.Cluster, in *claims.Input) error {
	claimable := map[schema.GroupVersionKind]map[string]bool{
		routekinds.Ingress{}.GroupVersionKind(): in.Ingresses, routekinds.HTTPRoute{}.GroupVersionKind(): in.HTTPRoutes,
		routekinds.GRPCRoute{}.GroupVersionKind(): in.GRPCRoutes}
	for _, k := range cluster.RouteKinds() {
		list := k.NewList()
		if err := cluster.Reader().List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return clusteraccess.DescribeError("read the user cluster's "+k.Resource(), err)
		}
		exist := claimable[k.GroupVersionKind()]
		for _, o := range k.Items(list) {
			if exist != nil && o.GetDeletionTimestamp() == nil {
				exist[o.GetNamespace()+"/"+o.GetName()] = true
			}
			// Hosts count as held once Shardgate allocated them (the annotations only it may write).
			_, hosts := allocation.Held(o)
			for _, h := range hosts {
				if h != "" {
					in.HeldHosts[h] = o.GetNamespace()
				}
			}
		}
	}
	return nil
}
