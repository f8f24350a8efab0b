package shards

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// roleState is how a router ClusterRole in the user cluster compares with the rendered one.
type roleState int

const (
	roleAsRendered roleState = iota // it grants exactly what Shardgate renders: nothing to write
	roleMissing
	roleDiffers
)

// compareRouterRole compares a live router ClusterRole (nil: absent) with the rendered one by what
// they grant, not by who wrote them: the roles the cluster admin created from
// config/user-cluster/rbac.yaml carry no applied hash, and Shardgate, which may only bind them
// there, must not need to write them. A role that aggregates others grants what they grant.
func compareRouterRole(live, want *rbacv1.ClusterRole) roleState {
	switch {
	case live == nil || live.DeletionTimestamp != nil:
		return roleMissing
	case live.AggregationRule != nil || !sameGrants(live.Rules, want.Rules):
		return roleDiffers
	}
	return roleAsRendered
}

// sameGrants reports whether two rule lists grant the same set of (group, resource, name, verb)
// and (URL, verb) permissions, however they are split into rules or ordered.
func sameGrants(a, b []rbacv1.PolicyRule) bool {
	x, y := grants(a), grants(b)
	return slices.Equal(x, y)
}

// grants expands rules into sorted, deduplicated atomic permissions.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	orAll := func(s []string) []string {
		if len(s) == 0 {
			return []string{""}
		}
		return s
	}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, "url "+u+" "+v)
			}
			if len(r.Resources) == 0 {
				continue
			}
			for _, g := range orAll(r.APIGroups) {
				for _, res := range r.Resources {
					for _, n := range orAll(r.ResourceNames) {
						out = append(out, strings.Join([]string{"res", g, res, n, v}, " "))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readRouterRole reads the router ClusterRole desired names (through the cache, which holds the
// ones labelled shardgate.io/managed-by) and compares it with desired.
func readRouterRole(ctx context.Context, rd client.Reader, desired *unstructured.Unstructured) (roleState, error) {
	want := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(desired.Object, want); err != nil {
		return 0, err
	}
	live := &rbacv1.ClusterRole{}
	switch err := rd.Get(ctx, client.ObjectKey{Name: desired.GetName()}, live); {
	case apierrors.IsNotFound(err):
		return compareRouterRole(nil, want), nil
	case err != nil:
		return 0, err
	}
	return compareRouterRole(live, want), nil
}

// routerRoleProblem is ShardsAvailable's reason and message for a router ClusterRole Shardgate
// may not write (the role of config/user-cluster/rbac.yaml grants only `bind` on it) and that
// is not there as rendered: the routers would run without the rights they need, or with more.
func routerRoleProblem(state roleState, name string) (reason, msg string) {
	if state == roleMissing {
		return v1alpha1.ReasonRouterRoleMissing, fmt.Sprintf("ClusterRole %s does not exist and Shardgate may not create it: "+
			"create it as config/user-cluster/rbac.yaml ships it", name)
	}
	return v1alpha1.ReasonRouterRoleDiffers, fmt.Sprintf("ClusterRole %s does not grant what the routers need, exactly, and "+
		"Shardgate may not change it: replace it with the one config/user-cluster/rbac.yaml ships", name)
}
