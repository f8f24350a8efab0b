package shards

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// prunable is a kind of object Shardgate owns in a user cluster, as the typed list the
// user-cluster cache serves.
type prunable struct {
	kind string
	list client.ObjectList
	// namespace limits the list ("" for every namespace).
	namespace string
}

// prunableKinds are every kind the user-cluster cache watches for Shardgate's label, except pods
// (their Deployments own them) and Leases (the VIP agents' reports), plus the shared namespace,
// the route kinds' inputs Shardgate renders (the IngressClass) and the route kinds' canary routes
// (all cached whole, listed by label). One list serves pruning removed shards and removing
// everything on cleanup, and it is the engager's own list, so a rendered kind cannot be
// forgotten here (TestRenderedKindsArePrunable).
func prunableKinds(scheme *runtime.Scheme, caps clusteraccess.Capabilities, routes routekinds.Registry,
) ([]prunable, error) {
	objs := append(clusteraccess.ManagedKinds(caps), &corev1.Namespace{})
	for _, c := range routes.Cached() {
		if c.Rendered {
			objs = append(objs, c.Object)
		}
	}
	// The routes: the shards' canary routes, in Shardgate's namespace only: a tenant's route
	// carrying the managed-by label is not Shardgate's to delete.
	canaries := len(objs)
	for _, k := range routes {
		objs = append(objs, k.New())
	}
	var out []prunable
	for i, o := range objs {
		switch o.(type) {
		case *corev1.Pod, *coordinationv1.Lease:
			continue // owned by their Deployments; written by the VIP agents (gone with the namespace)
		}
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return nil, err
		}
		l, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return nil, err
		}
		p := prunable{kind: gvk.Kind, list: l.(client.ObjectList)}
		if i >= canaries {
			p.namespace = names.Namespace
		}
		out = append(out, p)
	}
	return out, nil
}
