package canary

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
)

// Reconciler checks one cluster's shards: gather (the shards, their entry ports), probe
// (canary.Probe), record (status.canaries, RoutesServing, metrics).
type Reconciler struct {
	Client   client.Client
	Access   clusteraccess.Access
	Interval time.Duration
	Resolve  canary.Resolve
	Refused  canary.Refused
	// NodePorts: the node ports a NodePort shard is requested at (zero: canary.DefaultNodePorts).
	NodePorts canary.PortRange
	// Board takes status.canaries and RoutesServing (cistatus.Canary).
	Board   *cistatus.Board
	Get     canary.Get
	Limiter *rate.Limiter
}

// Reconcile checks every shard of the cluster and comes back after Interval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if client.IgnoreNotFound(err) == nil {
			forgetServing(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	if ci.DeletionTimestamp != nil || ci.Spec.Canary.Disabled {
		// Nothing is checked: nothing is claimed either way.
		ci.Status.Canaries = nil
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionRoutesServing)
		forgetServing(req.String())
		r.Board.Post(ctx, ci, cistatus.Canary)
		return ctrl.Result{}, nil
	}
	if ci.Status.Domain == "" {
		// No names yet, or no more (the domain was yielded): nothing to request, and a sample or
		// verdict of names the cluster no longer has would page for them.
		forgetServing(req.String())
		if len(ci.Status.Canaries) > 0 || meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionRoutesServing) != nil {
			ci.Status.Canaries = nil
			meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionRoutesServing)
			r.Board.Post(ctx, ci, cistatus.Canary)
		}
		return ctrl.Result{RequeueAfter: r.Interval}, nil
	}
	prev := map[string]v1alpha1.CanaryStatus{}
	for _, c := range ci.Status.Canaries {
		prev[c.Shard] = c
	}
	ready := map[string]int32{}
	for _, s := range ci.Status.Shards {
		ready[s.Name] = s.ReadyReplicas
	}
	var out []v1alpha1.CanaryStatus
	var failing []string
	values := map[string]float64{}
	for _, s := range ci.Shards() {
		domain := names.ShardDomain(s.Name, ci.Status.Domain)
		st := v1alpha1.CanaryStatus{Shard: s.Name, Host: names.CanaryHost(domain), Conditions: prev[s.Name].Conditions}
		last := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRoutesServing)
		cond, err := r.check(ctx, req, s, domain, ready[s.Name], last)
		if err != nil {
			return ctrl.Result{}, err
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		if cond.Status != metav1.ConditionTrue {
			failing = append(failing, s.Name+": "+cond.Reason)
		}
		if requested(cond.Reason) {
			values[s.Name] = 0
			if cond.Status == metav1.ConditionTrue {
				values[s.Name] = 1
			}
		}
		out = append(out, st)
	}
	recordServing(req.String(), values)
	ci.Status.Canaries = out
	all := metav1.Condition{Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonServing,
		Message: fmt.Sprintf("every shard's canary answers (%d)", len(out))}
	if len(failing) > 0 {
		all.Status, all.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotAnswering
		all.Message = "shards whose canary fails: " + strings.Join(failing, ", ")
	}
	meta.SetStatusCondition(&ci.Status.Conditions, all)
	r.Board.Post(ctx, ci, cistatus.Canary)
	return ctrl.Result{RequeueAfter: r.Interval}, nil
}

// check is RoutesServing of one shard: its flavour's canary request, through the shard's entry
// port to the addresses its canary host resolves to, once it has a ready router; where its
// routers serve its Gateway, the same request for the Gateway's canary host too.
func (r *Reconciler) check(ctx context.Context, req ctrl.Request, s v1alpha1.ShardSpec, domain string, ready int32,
	last *metav1.Condition) (metav1.Condition, error) {
	notServing := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionRoutesServing, Status: metav1.ConditionFalse,
			Reason: reason, Message: msg}
	}
	if ready == 0 {
		// Not a failure of routes: there are no routers yet (ShardsAvailable says why).
		return notServing(v1alpha1.ReasonNoRouterReady, "the shard has no ready router (ShardsAvailable says why; "+
			"for a claimed shard, its IngressClaim)"+canary.LastFailure(last)), nil
	}
	flavour, known := render.FlavourFor(s.Flavour)
	if !known {
		// Routers of a flavour this binary does not render (a downgrade): no canary route to ask.
		return notServing(v1alpha1.ReasonCanaryPending,
			fmt.Sprintf("the shard's flavour %q is not one Shardgate renders", s.Flavour)), nil
	}
	port, err := r.entryPort(ctx, req, s)
	var refused refusedPort
	switch {
	case errors.As(err, &refused):
		return notServing(v1alpha1.ReasonAddressRefused, err.Error()), nil
	case err != nil:
		return notServing(v1alpha1.ReasonCanaryPending, err.Error()), nil
	}
	if err := r.Limiter.Wait(ctx); err != nil {
		return metav1.Condition{}, err
	}
	c := flavour.Canary()
	req1 := canary.Request{Path: c.Path, Body: c.Body}
	res := canary.Probe(ctx, names.CanaryHost(domain), port, req1, r.Refused, r.Resolve, r.Get)
	checks.WithLabelValues(res.Reason).Inc()
	if res.Reason == v1alpha1.ReasonServing && r.servesGateway(req, flavour) {
		// And through the shard's Gateway: what every HTTPRoute travels (the canary's HTTPRoute).
		if err := r.Limiter.Wait(ctx); err != nil {
			return metav1.Condition{}, err
		}
		gw := canary.Probe(ctx, names.CanaryGatewayHost(domain), port, req1, r.Refused, r.Resolve, r.Get)
		checks.WithLabelValues(gw.Reason).Inc()
		if gw.Reason != v1alpha1.ReasonServing {
			gw.Failure = "through the shard's Gateway (the canary's HTTPRoute): " + gw.Failure
			res = gw
		}
	}
	return canary.Condition(last, res), nil
}

// servesGateway reports whether the shard's routers serve its Gateway (the cluster serves Gateway
// API to them and the flavour has a GatewayClass), so that the canary's HTTPRoute routes it too.
func (r *Reconciler) servesGateway(req ctrl.Request, f render.Flavour) bool {
	cluster, ok := r.Access.Get(req.NamespacedName)
	return ok && f.GatewayClassController() != "" && cluster.Capabilities().GatewayAPI.RoutersServe()
}

// entryPort is where users reach the shard's routers at its DNS targets: 80, or the NodePort of
// a NodePort shard's Service (within the node-port range: refusedPort otherwise).
func (r *Reconciler) entryPort(ctx context.Context, key ctrl.Request, s v1alpha1.ShardSpec) (int, error) {
	if s.Publishing != v1alpha1.PublishNodePort {
		return 80, nil
	}
	cluster, ok := r.Access.Get(key.NamespacedName)
	if !ok {
		return 0, fmt.Errorf("the cluster is not engaged: its NodePort is unknown")
	}
	svc := &corev1.Service{}
	if err := cluster.Reader().Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(s.Name)}, svc); err != nil {
		return 0, clusteraccess.DescribeError("read the router Service", err)
	}
	ports := r.NodePorts
	if ports == (canary.PortRange{}) {
		ports = canary.DefaultNodePorts
	}
	return routerNodePort(svc, ports)
}

// refusedPort is a NodePort the canary does not request.
type refusedPort string

func (e refusedPort) Error() string { return string(e) }

// routerNodePort is the router Service's web NodePort, as the user cluster's API server reports
// it: its owner may write any port there, so one outside the node-port range is refused.
func routerNodePort(svc *corev1.Service, allowed canary.PortRange) (int, error) {
	for _, p := range svc.Spec.Ports {
		if p.Name == "web" && p.NodePort != 0 {
			if why := allowed.Refuses(int(p.NodePort)); why != "" {
				return 0, refusedPort("the router Service's NodePort is not requested: " + why)
			}
			return int(p.NodePort), nil
		}
	}
	return 0, fmt.Errorf("the router Service has no NodePort yet")
}
