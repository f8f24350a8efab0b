package load

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routerload"
	"github.com/shardgate/shardgate/pkg/validation"
)

// recheck is how often a cluster whose shards report load is looked at again with no event: a
// reporter that stops renewing its Lease sends none, and its report must still go stale.
const recheck = 10 * time.Second

// Reconciler records the load of a cluster's load-reporting shards.
type Reconciler struct {
	Client   client.Client
	Access   clusteraccess.Access
	Board    *cistatus.Board
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// posted is when each cluster's part last changed (wait).
	posted map[types.NamespacedName]time.Time
}

// Reconcile gathers the reports and ready routers, decides (routerload.Observe, Replicas,
// Saturation, Publish) and posts the part, at most once per postInterval; an Event tells each
// shard that becomes Saturated, and each change of the routers that follow load.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName) // gone before its deletion was seen: no series outlives it
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	if ci.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	specs := ci.Shards()
	if errs := validation.Shards(specs, field.NewPath("spec", "shards")); len(errs) > 0 {
		return ctrl.Result{}, nil // ShardsAvailable says why; the last figures stay
	}
	var reporting []v1alpha1.ShardSpec
	for _, s := range specs {
		if s.Load != nil {
			reporting = append(reporting, s)
		}
	}
	if len(reporting) == 0 {
		ci.Status.ShardLoad = nil
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionShardsSaturated)
		r.forget(req.NamespacedName)
		r.Board.Post(ctx, ci, cistatus.Load)
		return ctrl.Result{}, nil
	}
	now := r.now()
	var loads []v1alpha1.ShardLoadStatus
	var scaled []string
	cluster, ok := r.Access.Get(req.NamespacedName)
	if ok && cluster.Observable() {
		var err error
		if loads, err = observe(ctx, cluster.Reader(), reporting, ci.Status.ShardLoad, now); err != nil {
			return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
		}
		// The routers follow the load the reports say now; status keeps figures that moved less
		// than a step, which would hold a shard at a size its load no longer asks for.
		if scaled, err = follow(ctx, cluster.Reader(), ci, reporting, loads, now); err != nil {
			return ctrl.Result{}, clusteraccess.DescribeError("read the user cluster's cache", err)
		}
		loads = routerload.Publish(ci.Status.ShardLoad, loads)
	} else {
		// No report can be read: once the last ones would have gone stale, the load is unknown
		// (never kept Saturated, paging, for a cluster nobody sees). The replicas stay.
		since := now
		if ok && !cluster.State().Since.IsZero() {
			since = cluster.State().Since
		}
		if wait := routerload.MaxFreshness - now.Sub(since); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		loads = routerload.Publish(ci.Status.ShardLoad, routerload.Unobserved(reporting, ci.Status.ShardLoad))
	}
	published := loads
	status, reason, msg := routerload.Saturation(published)
	cond := metav1.Condition{Type: v1alpha1.ConditionShardsSaturated, Status: metav1.ConditionStatus(status), Reason: reason,
		Message: msg, ObservedGeneration: ci.Generation}
	if changed(ci, published, cond) {
		if wait := r.wait(req.NamespacedName, now); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil // a cluster's owner does not set the pace of seed writes
		}
		r.tell(ci, published, scaled)
	}
	forgetCluster(req.String())
	for _, l := range published {
		recordShard(req.String(), l)
	}
	ci.Status.ShardLoad = published
	meta.SetStatusCondition(&ci.Status.Conditions, cond)
	r.Board.Post(ctx, ci, cistatus.Load)
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// postInterval is the least time between two changes of a cluster's load part: the reporters'
// renewal. Lease writes in the user cluster, however fast, change the seed's status no faster.
const postInterval = 10 * time.Second

// wait is how long the cluster's part must wait before it may change again (0: now, which it
// records).
func (r *Reconciler) wait(key types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := postInterval - now.Sub(r.posted[key]); w > 0 && !r.posted[key].IsZero() {
		return w
	}
	if r.posted == nil {
		r.posted = map[types.NamespacedName]time.Time{}
	}
	r.posted[key] = now
	return 0
}

func (r *Reconciler) forget(key types.NamespacedName) {
	forgetCluster(key.String())
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.posted, key)
}

// changed says whether the part differs from the status: the figures and decisions, or the
// condition's status, reason or message.
func changed(ci *v1alpha1.ClusterIngress, loads []v1alpha1.ShardLoadStatus, cond metav1.Condition) bool {
	c := meta.FindStatusCondition(ci.Status.Conditions, cond.Type)
	return c == nil || c.Status != cond.Status || c.Reason != cond.Reason || c.Message != cond.Message ||
		!equality.Semantic.DeepEqual(ci.Status.ShardLoad, loads)
}

// tell records an Event for each shard that becomes Saturated and each change of the routers that
// follow load.
func (r *Reconciler) tell(ci *v1alpha1.ClusterIngress, loads []v1alpha1.ShardLoadStatus, scaled []string) {
	for _, l := range loads {
		if l.State == v1alpha1.LoadSaturated && previousState(ci.Status.ShardLoad, l.Shard) != v1alpha1.LoadSaturated {
			r.Recorder.Eventf(ci, nil, "Warning", v1alpha1.ReasonSaturated, "Observe",
				"shard %s is saturated: %d%% of %d requests/s per router (%d requests/s over %d router(s)); add routers or shards",
				l.Shard, l.UtilizationPercent, l.CapacityRequestsPerSecond, l.RequestsPerSecond, l.ReportingRouters)
		}
	}
	for _, msg := range scaled {
		r.Recorder.Eventf(ci, nil, "Normal", "RoutersFollowLoad", "Scale", "%s", msg)
	}
}

// observe gathers each reporting shard's reports and ready routers and decides its load.
func observe(ctx context.Context, rd client.Reader, shards []v1alpha1.ShardSpec, previous []v1alpha1.ShardLoadStatus,
	now time.Time,
) ([]v1alpha1.ShardLoadStatus, error) {
	reports, err := routerload.Reports(ctx, rd, now)
	if err != nil {
		return nil, err
	}
	out := make([]v1alpha1.ShardLoadStatus, 0, len(shards))
	for _, s := range shards {
		ready, err := readyRouters(ctx, rd, s.Name)
		if err != nil {
			return nil, err
		}
		in := render.LoadShard(s, ready, reports[s.Name], previousState(previous, s.Name))
		out = append(out, routerload.Observe(in, now))
	}
	return out, nil
}

func previousState(loads []v1alpha1.ShardLoadStatus, shard string) v1alpha1.ShardLoadState {
	for _, l := range loads {
		if l.Shard == shard {
			return l.State
		}
	}
	return ""
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// readyRouters are a shard's ready routers (its Deployment's; none without one).
func readyRouters(ctx context.Context, rd client.Reader, shard string) (int32, error) {
	d := &appsv1.Deployment{}
	switch err := rd.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(shard)}, d); {
	case err == nil:
		return d.Status.ReadyReplicas, nil
	case apierrors.IsNotFound(err):
		return 0, nil
	default:
		return 0, err
	}
}
