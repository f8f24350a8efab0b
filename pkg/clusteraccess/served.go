package clusteraccess

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// groupVersions asks discovery which kinds a group version serves, each at most once per first
// contact: one small request per group version (/apis/<group>/<version>).
type groupVersions struct {
	rc      rest.Interface
	answers map[schema.GroupVersion]map[string]string // kind → resource; empty: not served
}

func newGroupVersions(rc rest.Interface) *groupVersions {
	return &groupVersions{rc: rc, answers: map[schema.GroupVersion]map[string]string{}}
}

// kinds are the kinds gv serves, each with its resource (subresources left out); none when the
// server does not serve gv at all.
func (g *groupVersions) kinds(ctx context.Context, gv schema.GroupVersion) (map[string]string, error) {
	if k, ok := g.answers[gv]; ok {
		return k, nil
	}
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	list := &metav1.APIResourceList{}
	err := g.rc.Get().MaxRetries(0).AbsPath(path).Do(ctx).Into(list)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			out[r.Kind] = r.Name
		}
	}
	g.answers[gv] = out
	return out, nil
}

// forget drops gv's answer: the engagement has just changed what it serves.
func (g *groupVersions) forget(gv schema.GroupVersion) { delete(g.answers, gv) }

// unservedKinds are the route kinds' cached kinds (routekinds.Cached) the cluster does not serve:
// discovery does not list them, or they are Gateway API's and the cluster offers no Gateway API
// routes to Shardgate (gatewayAPI.Served false: turned off, refused, too old), asked nothing then,
// or Shardgate may not list them there (forbidden, by kind: a role of an older release, which
// knew fewer route kinds). A cache that listed a kind the server does not serve, or will not
// show, would fail its first sync and leave the whole cluster unreachable; a kind left out is
// simply not there for this cluster.
func unservedKinds(ctx context.Context, disc *groupVersions, scheme *runtime.Scheme, routes routekinds.Registry,
	gatewayAPI gatewayapi.Availability) (unserved map[schema.GroupVersionKind]bool, forbidden []forbiddenKind, err error) {
	unserved = map[schema.GroupVersionKind]bool{}
	for _, c := range routes.Cached() {
		gvk := gvkOf(scheme, c.Object)
		// ListenerSets the cluster serves but Shardgate may not list (gatewayAPI.ListenerSet says
		// which) are not listed either: such a cache would never sync.
		if gvk.Group == gatewayapi.Group && (!gatewayAPI.Served || gvk.Kind == "ListenerSet" && !gatewayAPI.ListenerSet) {
			unserved[gvk] = true
			continue
		}
		kinds, err := disc.kinds(ctx, gvk.GroupVersion())
		if err != nil {
			return nil, nil, err
		}
		resource, ok := kinds[gvk.Kind]
		if !ok {
			unserved[gvk] = true
			continue
		}
		if gvk.Group != gatewayapi.Group {
			continue // Ingresses and IngressClasses: every release's role has them
		}
		path := "/apis/" + gvk.Group + "/" + gvk.Version + "/" + resource
		may, err := mayList(ctx, disc.rc, path)
		if err != nil {
			return nil, nil, err
		}
		if !may {
			unserved[gvk] = true
			forbidden = append(forbidden, forbiddenKind{Kind: gvk.Kind, Path: path})
		}
	}
	return unserved, forbidden, nil
}

// mayList reports whether Shardgate may list what path names, by listing one object of it: a
// refusal is Forbidden.
func mayList(ctx context.Context, rc rest.Interface, path string) (bool, error) {
	err := rc.Get().MaxRetries(0).AbsPath(path).Param("limit", "1").Do(ctx).Error()
	switch {
	case apierrors.IsForbidden(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// forbiddenKind is a kind the cluster serves that Shardgate may not list there, and its list path.
type forbiddenKind struct{ Kind, Path string }

// forbiddenKindsMessage is what GatewayAPIAvailable adds for the Gateway API kinds Shardgate may
// not list in a cluster ("" for none).
func forbiddenKindsMessage(kinds []forbiddenKind) string {
	if len(kinds) == 0 {
		return ""
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Kind
	}
	return "; Shardgate may not list " + strings.Join(names, "s, ") + "s in this cluster (apply this release's " +
		"config/user-cluster/rbac.yaml; Shardgate asks again every 30 s): they are not served"
}

// servedRouteKinds are the route kinds of a cluster that does not serve unserved: a kind whose
// routes are unserved is left out, and a kept kind whose other cached kinds are partly unserved
// says so in its Cached (the cache holds what that lists; a read of another is
// watchcache.ErrNotHeld).
func servedRouteKinds(routes routekinds.Registry, scheme *runtime.Scheme, unserved map[schema.GroupVersionKind]bool) routekinds.Registry {
	out := routekinds.Registry{}
	for _, k := range routes {
		if unserved[k.GroupVersionKind()] {
			continue
		}
		all := k.Cached()
		var held []routekinds.Cached
		for _, c := range all {
			if !unserved[gvkOf(scheme, c.Object)] {
				held = append(held, c)
			}
		}
		if len(held) == len(all) {
			out = append(out, k)
			continue
		}
		out = append(out, heldKind{Kind: k, held: held})
	}
	return out
}

// heldKind is a route kind of which the cluster serves only some cached kinds.
type heldKind struct {
	routekinds.Kind
	held []routekinds.Cached
}

// Cached implements routekinds.Kind: what this cluster's cache holds of the kind.
func (k heldKind) Cached() []routekinds.Cached { return k.held }

// gvkOf is obj's kind in scheme. Every route kind's types are in the engager's scheme (NewEngager
// maps them all, and fails otherwise), so the zero kind it returns on error is never asked.
func gvkOf(scheme *runtime.Scheme, obj client.Object) schema.GroupVersionKind {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	return gvk
}
