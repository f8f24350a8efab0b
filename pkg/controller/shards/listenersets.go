package shards

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// listenerSets gathers what deciding the cluster's tenants' ListenerSets reads
// (listenersets.Decide) from the cache: the ListenerSets, and the allocation marks of the routes
// holding the hosts they name. None where the cluster serves no ListenerSet (the cache does not
// hold them) or its routers no Gateway API.
func listenerSets(ctx context.Context, cluster clusteraccess.Cluster, shards []v1alpha1.ShardSpec, domain string,
) (listenersets.Input, error) {
	if !cluster.Capabilities().GatewayAPI.RoutersServe() {
		return listenersets.Input{}, nil
	}
	sets := &gatewayv1.ListenerSetList{}
	if err := cluster.Reader().List(ctx, sets); errors.Is(err, watchcache.ErrNotHeld) {
		return listenersets.Input{}, nil
	} else if err != nil {
		return listenersets.Input{}, clusteraccess.DescribeError("list ListenerSets", err)
	}
	hosts := listenersets.Hostnames(sets.Items)
	if len(hosts) == 0 {
		return listenersets.Input{Sets: sets.Items, Kinds: render.AllocatedRouteKinds(cluster.RouteKinds())}, nil
	}
	var routes []listenersets.Route
	for _, k := range cluster.RouteKinds() {
		list := k.NewList()
		// Read only: the marks of each route, never written here.
		if err := cluster.Reader().List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return listenersets.Input{}, clusteraccess.DescribeError("list "+k.Name()+"s", err)
		}
		for _, r := range k.Items(list) {
			if rt, ok := listenersets.RouteOf(r, k.GroupVersionKind().Group == gatewayapi.Group); ok {
				routes = append(routes, rt)
			}
		}
	}
	gateways := map[string]bool{}
	for _, s := range shards {
		if f, ok := render.FlavourFor(s.Flavour); ok && f.GatewayClassController() != "" {
			gateways[s.Name] = true
		}
	}
	return listenersets.Input{Sets: sets.Items, Kinds: render.AllocatedRouteKinds(cluster.RouteKinds()),
		Holders: listenersets.Holders(routes, hosts), Gateways: gateways,
		ClusterDomain: domain}, nil
}

// told is in with what became of its decision this pass: the shards that failed, the namespaces
// whose grant was not written, and what the routers say of each tenant listener on their Gateway
// (the cached Gateways' status, as fresh as the drift check lists them).
func told(ctx context.Context, cluster clusteraccess.Cluster, in listenersets.Input, failed, ungranted map[string]error,
) listenersets.Input {
	in.Unapplied, in.Ungranted, in.Routers = map[string]bool{}, map[string]string{}, map[string][]metav1.Condition{}
	for shard := range failed {
		in.Unapplied[shard] = true
	}
	for ns, err := range ungranted {
		in.Ungranted[ns] = "the ReferenceGrant " + render.ListenerGrantName + " letting the shards' Gateways read its Secrets " +
			"could not be written: " + grantProblem(err)
	}
	gws := &gatewayv1.GatewayList{}
	if err := cluster.Reader().List(ctx, gws, client.InNamespace(names.Namespace)); err == nil {
		for _, gw := range gws.Items {
			for _, l := range gw.Status.Listeners {
				in.Routers[string(l.Name)] = l.Conditions
			}
		}
	}
	return in
}

// errGrantInTheWay: the tenant's namespace has a ReferenceGrant of Shardgate's name it did not
// write; it is the tenant's, never taken over.
var errGrantInTheWay = errors.New("a ReferenceGrant of that name Shardgate did not write is in the namespace: " +
	"rename or delete it")

// grantProblem says why a grant could not be written, without the API server's words (they may
// name another object).
func grantProblem(err error) string {
	switch {
	case errors.Is(err, errGrantInTheWay):
		return errGrantInTheWay.Error()
	case apierrors.IsForbidden(err):
		return "refused (forbidden: is the namespace being deleted, or may Shardgate not write ReferenceGrants?)"
	case apierrors.IsInvalid(err):
		return "refused as invalid"
	}
	return "the user cluster did not take it; tried again"
}

// applyTenantObject applies an object of a tenant's namespace, unless one of its name that
// Shardgate did not write is there: the cache holds only Shardgate's objects, so the server is
// asked first.
func applyTenantObject(ctx context.Context, cluster clusteraccess.Cluster, o *unstructured.Unstructured,
	apply func(*unstructured.Unstructured) error) error {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	err := cluster.Writer().Get(ctx, client.ObjectKeyFromObject(o), live)
	switch {
	case err == nil && live.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue:
		return errGrantInTheWay
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return apply(o)
}

// tellListenerSets writes each decided ListenerSet's status where it says something else, keeping
// the transition times of conditions that did not change.
func tellListenerSets(ctx context.Context, cluster clusteraccess.Cluster, sets []gatewayv1.ListenerSet,
	d listenersets.Decision, now metav1.Time) error {
	for i := range sets {
		want, ok := d.Status[types.NamespacedName{Namespace: sets[i].Namespace, Name: sets[i].Name}]
		if !ok {
			continue
		}
		have := sets[i].Status
		keepTransitions(&want, &have, now)
		if sameListenerSetStatus(want, have) {
			continue
		}
		s := sets[i].DeepCopy()
		s.Status = want
		// A conflict is retried (the pass' error): the cache may not show this controller's own last
		// status write yet, and that write, status only, wakes no pass by itself.
		if err := cluster.Writer().Status().Update(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			return clusteraccess.DescribeError(fmt.Sprintf("write the status of ListenerSet %s/%s", s.Namespace, s.Name), err)
		}
	}
	return nil
}

// keepTransitions sets want's conditions' transition times: the old one where the status did
// not change, now otherwise.
func keepTransitions(want, have *gatewayv1.ListenerSetStatus, now metav1.Time) {
	stamp := func(w []metav1.Condition, h []metav1.Condition) {
		for i := range w {
			w[i].LastTransitionTime = now
			if old := meta.FindStatusCondition(h, w[i].Type); old != nil && old.Status == w[i].Status {
				w[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	stamp(want.Conditions, have.Conditions)
	for i := range want.Listeners {
		var old []metav1.Condition
		for _, l := range have.Listeners {
			if l.Name == want.Listeners[i].Name {
				old = l.Conditions
			}
		}
		stamp(want.Listeners[i].Conditions, old)
	}
}

// sameListenerSetStatus compares two statuses as JSON would (nil and empty lists alike).
func sameListenerSetStatus(a, b gatewayv1.ListenerSetStatus) bool {
	return equalConditions(a.Conditions, b.Conditions) && len(a.Listeners) == len(b.Listeners) &&
		func() bool {
			for i := range a.Listeners {
				x, y := a.Listeners[i], b.Listeners[i]
				if x.Name != y.Name || x.AttachedRoutes != y.AttachedRoutes || len(x.SupportedKinds) != len(y.SupportedKinds) ||
					!equalConditions(x.Conditions, y.Conditions) {
					return false
				}
			}
			return true
		}()
}
