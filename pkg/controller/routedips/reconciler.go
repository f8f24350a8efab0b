package routedips

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// reconcileDeadline bounds one cluster's pass (its user-cluster writes each may wait up to the
// access layer's write timeout); morePassDelay is when a pass that left status writes for later
// comes back.
const (
	reconcileDeadline = 15 * time.Second
	morePassDelay     = 2 * time.Second
)

// Reconciler places one user cluster's routed IPs.
type Reconciler struct {
	Client client.Client
	// APIReader reads the pods of a failed Job (uncached).
	APIReader    client.Reader
	Access       clusteraccess.Access
	JobNamespace string
	Clock        clock.PassiveClock
	Recorder     events.EventRecorder
	// Board takes status.routedIPs and RoutedIPsAssigned (cistatus.RoutedIPs), written before
	// any Job the record asks for.
	Board *cistatus.Board
}

// Reconcile gathers (the cluster's RoutedIPs, nodes and endpoints from its cache; classes, the
// other clusters' records and this cluster's Jobs from the seed), decides (Admit, Elect, Advance
// per address) and applies: taints, the seed's record, read Jobs deleted and new ones created,
// the RoutedIPs' status. Nothing changes while the cluster cannot be observed: a node that cannot be seen is
// not a node that failed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// A user API server that holds requests takes this pass' worker for a bounded time.
	ctx, cancel := context.WithTimeout(ctx, reconcileDeadline)
	defer cancel()
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	cluster, ok := r.Access.Get(req.NamespacedName)
	if ci.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, ci, cluster, ok && cluster.Observable())
	}
	if !ok || !cluster.Observable() {
		return ctrl.Result{}, nil
	}
	shardIPs := shardRequests(ci)
	if (len(shardIPs) > 0 || len(ci.Status.RoutedIPs) > 0) && !controllerutil.ContainsFinalizer(ci, v1alpha1.RoutedIPCleanupFinalizer) {
		patch := client.MergeFrom(ci.DeepCopy())
		controllerutil.AddFinalizer(ci, v1alpha1.RoutedIPCleanupFinalizer)
		if err := r.Client.Patch(ctx, ci, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !cluster.Capabilities().CRDs {
		if len(shardIPs) > 0 {
			meta.SetStatusCondition(&ci.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionRoutedIPsAssigned, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonRoutedIPsNotAllowed, ObservedGeneration: ci.Generation,
				Message: "Shardgate could not install the RoutedIP CRD in the user cluster (its role lacks the routed-IP rules of config/user-cluster/rbac.yaml)"})
		}
		return ctrl.Result{}, r.Board.Write(ctx, ci, cistatus.RoutedIPs)
	}
	if err := ensureShardRoutedIPs(ctx, cluster, shardIPs); err != nil {
		return ctrl.Result{}, err
	}
	g, err := r.gather(ctx, ci, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	verdicts, err := r.claimAddresses(ctx, ci, routedip.Admit(g.claims, ci.Spec.Profile, g.classes, g.takenElsewhere))
	if err != nil {
		return ctrl.Result{}, err
	}
	records, outs := r.decide(ctx, ci, g, verdicts, now)

	// Apply, in the seed document's order: new holders are tainted before any Job can assign them
	// an address; the record is written before a Job it read is deleted or a new one starts (a
	// Job's outcome is never lost to a failed status write, and a Job never runs ahead of the
	// record that asked for it); old holders lose the taint once no record names them.
	if err := syncTaints(ctx, cluster, g.nodes, records); err != nil {
		return ctrl.Result{}, err
	}
	ci.Status.RoutedIPs = records
	setCondition(ci, records, len(shardIPs) > 0)
	if err := r.Board.Write(ctx, ci, cistatus.RoutedIPs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.releaseAddresses(ctx, ci, records); err != nil {
		return ctrl.Result{}, err
	}
	var requeue time.Duration
	for _, o := range outs {
		if o.DeleteJob {
			if err := r.Client.Delete(ctx, o.job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
		if o.CreateJob {
			j := routedip.AssignJob(routedip.AssignJobInput{Class: g.classObjs[o.Record.ClassName], Namespace: r.JobNamespace,
				ClusterNamespace: ci.Namespace, ClusterName: ci.Name, ClusterID: ci.Status.ClusterID, Record: o.Record})
			if err := r.Client.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, err
			}
		}
		if o.Requeue > 0 && (requeue == 0 || o.Requeue < requeue) {
			requeue = o.Requeue
		}
		if o.Event != nil {
			r.event(ctx, ci, cluster, g, o)
		}
		if o.Moved {
			moves.WithLabelValues(o.Record.ClassName).Inc()
			moveDuration.WithLabelValues(o.Record.ClassName).Observe(o.MoveDuration.Seconds())
		}
		if o.Event != nil && o.Event.Warning {
			moveFailures.WithLabelValues(o.Record.ClassName).Inc()
		}
	}
	more, err := writeRoutedIPStatus(ctx, cluster, g.routedIPs, verdicts, records)
	if err != nil {
		return ctrl.Result{}, err
	}
	if more && (requeue == 0 || requeue > morePassDelay) {
		requeue = morePassDelay
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// gathered is what one reconcile decides from.
type gathered struct {
	routedIPs      []v1alpha1.RoutedIP
	claims         []routedip.Claim
	classes        map[string]routedip.Class
	classObjs      map[string]*v1alpha1.ClusterRoutedIPClass
	takenElsewhere map[string]string
	nodes          []corev1.Node
	slices         []discoveryv1.EndpointSlice
	jobs           map[string]*batchv1.Job // by address
}

func (r *Reconciler) gather(ctx context.Context, ci *v1alpha1.ClusterIngress, cluster clusteraccess.Cluster) (*gathered, error) {
	g := &gathered{classes: map[string]routedip.Class{}, classObjs: map[string]*v1alpha1.ClusterRoutedIPClass{}, takenElsewhere: map[string]string{}, jobs: map[string]*batchv1.Job{}}
	rips := &v1alpha1.RoutedIPList{}
	if err := cluster.Reader().List(ctx, rips); err != nil {
		return nil, clusteraccess.DescribeError("read the user cluster's RoutedIPs", err)
	}
	g.routedIPs = rips.Items
	classes := &v1alpha1.ClusterRoutedIPClassList{}
	if err := r.Client.List(ctx, classes); err != nil {
		return nil, err
	}
	for i := range classes.Items {
		c := &classes.Items[i]
		g.classes[c.Name], g.classObjs[c.Name] = routedip.ClassOf(c), c
	}
	var err error
	if g.claims, err = claimsOf(ctx, ci, cluster.Writer(), rips.Items, g.classes); err != nil {
		return nil, err
	}
	if g.nodes, err = cluster.Nodes(ctx); err != nil {
		return nil, clusteraccess.DescribeError("read the user cluster's nodes", err)
	}
	// EndpointSlices say where a RoutedIP's Service runs; a cluster without RoutedIPs needs none,
	// and its cache then never watches them (they are read on demand: every pod's coming and
	// going in the user cluster changes one).
	if len(g.claims) > 0 {
		eps := &discoveryv1.EndpointSliceList{}
		if err := cluster.Reader().List(ctx, eps); err != nil {
			return nil, clusteraccess.DescribeError("read the user cluster's EndpointSlices", err)
		}
		g.slices = eps.Items
	}
	all := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil, err
	}
	for _, o := range all.Items {
		if o.Namespace == ci.Namespace && o.Name == ci.Name {
			continue
		}
		for _, rec := range o.Status.RoutedIPs {
			// Unnamed: the verdict reaches the user cluster, and other clusters are none of its business.
			g.takenElsewhere[rec.Address] = "another cluster"
		}
	}
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(r.JobNamespace),
		client.MatchingLabels{routedip.JobClusterLabel: routedip.ClusterHash(ci.Namespace, ci.Name)}); err != nil {
		return nil, err
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.DeletionTimestamp != nil {
			continue
		}
		a := j.Labels[routedip.JobAddressLabel]
		if cur, ok := g.jobs[a]; !ok || j.CreationTimestamp.After(cur.CreationTimestamp.Time) {
			g.jobs[a] = j
		}
	}
	return g, nil
}

// advanced is one address' step and the Job it read.
type advanced struct {
	routedip.MoveOutput
	job *batchv1.Job
}

// decide elects per class and advances every admitted address; records of addresses no longer
// asked for are dropped (their holder keeps the address in the cloud: nothing tells the cloud to
// take it away, and the taint goes with the record), except while their class cannot be found or
// is unusable: then the record stays as it is, frozen (routedip.Frozen).
func (r *Reconciler) decide(ctx context.Context, ci *v1alpha1.ClusterIngress, g *gathered, verdicts []routedip.Verdict, now time.Time) ([]v1alpha1.RoutedIPRecord, []advanced) {
	old := map[string]v1alpha1.RoutedIPRecord{}
	for _, rec := range ci.Status.RoutedIPs {
		old[rec.Address] = rec
	}
	providerID := map[string]string{}
	for _, n := range g.nodes {
		providerID[n.Name] = n.Spec.ProviderID
	}
	byClass := map[string][]routedip.Request{}
	recs := map[string]v1alpha1.RoutedIPRecord{}
	var records []v1alpha1.RoutedIPRecord
	for _, v := range verdicts {
		if rec, ok := old[v.Address]; ok && routedip.Frozen(v) && rec.ClassName == v.ClassName && rec.RoutedIP == v.Key {
			rec.Reason, rec.Message = v.Reason, v.Message+"; the record is kept as it is until the class is usable again"
			records = append(records, rec)
			continue
		}
		if !v.Admitted {
			continue
		}
		class := g.classes[v.ClassName]
		serving := servingNodes(g.slices, v.Namespace, v.ServiceName)
		rec := old[v.Address]
		if rec.ClassName != v.ClassName || rec.RoutedIP != v.Key {
			// A record is an address given to one RoutedIP through one class; anything else is a
			// new record (whoever held it before, the cloud will be told again).
			rec = v1alpha1.RoutedIPRecord{Node: rec.Node, ProviderID: rec.ProviderID}
		}
		rec.Address, rec.ClassName, rec.RoutedIP = v.Address, v.ClassName, v.Key
		rec.Ports, _ = routedip.FirewallPorts(v.Ports, class) // Admit refused ports beyond the class's bounds
		recs[v.Address] = rec
		byClass[v.ClassName] = append(byClass[v.ClassName], routedip.Request{Key: v.Address, Holder: rec.Node, MovingTo: rec.MovingTo, Serving: serving})
	}
	var outs []advanced
	for className, reqs := range byClass {
		class, obj := g.classes[className], g.classObjs[className]
		nodes := electionNodes(g.nodes, routedip.InstancesOf(class.ProviderIDPattern, ci.Status.ClusterID))
		for _, d := range routedip.Elect(nodes, reqs, class.PerNodeIPLimit) {
			rec := recs[d.Key]
			in := routedip.MoveInput{Record: rec, Target: d.Node, TargetProviderID: providerID[d.Node], Why: d.Why, Now: now,
				FirewallOpen: class.PostAllow || d.Node == "" || routedip.Opens(obj.Status.Firewall, providerID[d.Node], rec.Ports)}
			var job *batchv1.Job
			if j := g.jobs[rec.Address]; j != nil {
				job = j
				o := routedip.Observe(j)
				// A Job already read (its deletion not yet in the cache) is not read twice.
				if rec.LastJob == nil || rec.LastJob.Name != j.Name {
					withPodMessage(ctx, r.APIReader, r.JobNamespace, &o)
					in.Job = &o
				}
			}
			out := routedip.Advance(in)
			if job != nil && in.Job == nil {
				out.DeleteJob = true
			}
			records = append(records, out.Record)
			outs = append(outs, advanced{MoveOutput: out, job: job})
		}
	}
	slices.SortFunc(records, func(a, b v1alpha1.RoutedIPRecord) int { return strings.Compare(a.Address, b.Address) })
	return records, outs
}

// electionNodes reads the cached nodes; a node whose provider ID is not proven to be one of the
// cluster's instances is Foreign (never elected: the class's credentials never act on it).
func electionNodes(nodes []corev1.Node, instances routedip.Instances) []routedip.Node {
	out := make([]routedip.Node, 0, len(nodes))
	for _, n := range nodes {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, routedip.Node{Name: n.Name, Created: n.CreationTimestamp.Time, Ready: ready, Schedulable: !n.Spec.Unschedulable,
			Deleting: n.DeletionTimestamp != nil, ProviderID: n.Spec.ProviderID, Foreign: instances.Refusal(n.Spec.ProviderID) != ""})
	}
	return out
}

// servingNodes: the nodes running a ready endpoint of namespace/name. (The ports come from the
// Service spec or Shardgate's rendering, never from EndpointSlices: any object names any port.)
func servingNodes(all []discoveryv1.EndpointSlice, namespace, name string) map[string]bool {
	serving := map[string]bool{}
	for _, s := range all {
		if s.Namespace != namespace || s.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		for _, e := range s.Endpoints {
			if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				serving[*e.NodeName] = true
			}
		}
	}
	return serving
}

// setCondition: RoutedIPsAssigned True when every record is held by its elected node; False
// with the first address' reason otherwise; absent for a cluster with no routed IPs at all.
func setCondition(ci *v1alpha1.ClusterIngress, records []v1alpha1.RoutedIPRecord, shards bool) {
	if len(records) == 0 && !shards {
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionRoutedIPsAssigned)
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionRoutedIPsAssigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRoutedIPsAssigned, ObservedGeneration: ci.Generation}
	var held, not []string
	for _, rec := range records {
		if rec.Reason == v1alpha1.ReasonRoutedIPsAssigned {
			held = append(held, rec.Address+" on "+rec.Node)
			continue
		}
		if c.Status == metav1.ConditionTrue {
			c.Status, c.Reason = metav1.ConditionFalse, rec.Reason
		}
		not = append(not, fmt.Sprintf("%s: %s", rec.Address, rec.Message))
	}
	switch {
	case len(records) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonRoutedIPMoving, "no RoutedIP of the shards is admitted yet (see the RoutedIPs in the user cluster)"
	case len(not) > 0:
		c.Message = strings.Join(not, "; ")
	default:
		c.Message = strings.Join(held, ", ")
	}
	meta.SetStatusCondition(&ci.Status.Conditions, c)
}

// event records a move's Event on the ClusterIngress (seed) and on the RoutedIP (user cluster).
func (r *Reconciler) event(ctx context.Context, ci *v1alpha1.ClusterIngress, cluster clusteraccess.Cluster, g *gathered, o advanced) {
	typ := corev1.EventTypeNormal
	if o.Event.Warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(ci, nil, typ, o.Event.Reason, "Move", "%s", o.Event.Message)
	for i := range g.routedIPs {
		ri := &g.routedIPs[i]
		if ri.Namespace+"/"+ri.Name == o.Record.RoutedIP {
			recordUserEvent(ctx, cluster.Writer(), ri, typ, o.Event.Reason, o.Event.UserMessage)
		}
	}
}
