package shards

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// listenerSets decides the cluster's tenants' ListenerSets (listenersets.Decide) from the cache:
// the ListenerSets, and the allocation marks of the routes holding the hosts they name. None where
// the cluster serves no ListenerSet (the cache does not hold them) or its routers no Gateway API.
func listenerSets(ctx context.Context, cluster clusteraccess.Cluster, shards []v1alpha1.ShardSpec, domain string,
) (listenersets.Decision, []gatewayv1.ListenerSet, error) {
	if !cluster.Capabilities().GatewayAPI.RoutersServe() {
		return listenersets.Decision{}, nil, nil
	}
	sets := &gatewayv1.ListenerSetList{}
	if err := cluster.Reader().List(ctx, sets); errors.Is(err, watchcache.ErrNotHeld) {
		return listenersets.Decision{}, nil, nil
	} else if err != nil {
		return listenersets.Decision{}, nil, clusteraccess.DescribeError("list ListenerSets", err)
	}
	hosts := listenersets.Hostnames(sets.Items)
	if len(hosts) == 0 {
		return listenersets.Decision{}, sets.Items, nil
	}
	var routes []listenersets.Route
	for _, k := range cluster.RouteKinds() {
		list := k.NewList()
		// Read only: the marks of each route, never written here.
		if err := cluster.Reader().List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return listenersets.Decision{}, nil, clusteraccess.DescribeError("list "+k.Name()+"s", err)
		}
		for _, r := range k.Items(list) {
			if rt, ok := listenersets.RouteOf(r, k.Name() == "HTTPRoute"); ok {
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
	return listenersets.Decide(listenersets.Input{Sets: sets.Items, Holders: listenersets.Holders(routes, hosts),
		Gateways: gateways, ClusterDomain: domain}), sets.Items, nil
}

// tellListenerSets writes each decided ListenerSet's status where it says something else, keeping
// the transition times of conditions that did not change. A ListenerSet that changed meanwhile is
// told at the next pass (its change wakes one).
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
		if err := cluster.Writer().Status().Update(ctx, s); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
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
