package clusteraccess

import (
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/watchcache"
)

// Capabilities are what a user cluster's API server offers beyond the kinds every supported
// version serves, found out once per engagement.
type Capabilities struct {
	// AdmissionPolicy: admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and its
	// binding are served (Kubernetes 1.30+).
	AdmissionPolicy bool
	// Version is the server's major.minor ("v1.37"), parsed, never the server's own text.
	Version string
	// StreamingLists: the server knows streaming lists (sendInitialEvents, Kubernetes 1.27+), so
	// the cache asks for them; whether it serves them (1.32, 1.34+) its first answer tells.
	StreamingLists bool
	// CRDs: Shardgate's user-cluster CRDs (RoutedIP, IngressClaim) are installed and established
	// (Shardgate installs them at first contact; false when its role may not).
	CRDs bool
	// GatewayAPI is what the cluster offers of Gateway API (Settings.GatewayAPI on: its CRDs
	// installed where absent, someone else's used as they are; see gatewayapi.Decide).
	GatewayAPI gatewayapi.Availability
	// Unserved are the route kinds' cached kinds (routekinds.Cached) the cluster does not serve,
	// found after the installs: the cache does not list them (Cluster.RouteKinds).
	Unserved map[schema.GroupVersionKind]bool
	// Forbidden are the list paths of kinds the cluster serves that Shardgate's role may not
	// list there (so they are among Unserved, or ListenerSets are not offered): asked again every
	// Options.RightsInterval.
	Forbidden []string
}

// ManagedKinds are the kinds of objects Shardgate owns in a user cluster (router pods included).
// The user-cluster cache holds only those carrying shardgate.io/managed-by=shardgate, so a
// cluster's other workloads cost nothing; any change to them wakes the controllers, which is
// how an edited or deleted router object is repaired: within seconds for the kinds watched, at
// the next drift check for the RepairOnly ones. The admission policy kinds are included only
// where the cluster serves them.
func ManagedKinds(caps Capabilities) []client.Object {
	kinds := []client.Object{
		&corev1.ServiceAccount{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Pod{},
		&appsv1.Deployment{}, &policyv1.PodDisruptionBudget{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.RoleBinding{},
		// The VIP agents' reports of who holds a VIP (written by router pods, not applied).
		&coordinationv1.Lease{},
	}
	if caps.AdmissionPolicy {
		kinds = append(kinds, &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
	}
	if caps.GatewayAPI.Served {
		kinds = append(kinds, &gatewayv1.GatewayClass{}, &gatewayv1.Gateway{})
	}
	if caps.GatewayAPI.RoutersServe() && caps.GatewayAPI.ListenerSet {
		// The grants letting shards' Gateways read the Secrets tenants' ListenerSets name, in
		// tenants' namespaces (render.ListenerGrants), where Shardgate may read them.
		kinds = append(kinds, &gatewayv1beta1.ReferenceGrant{})
	}
	return kinds
}

// RepairOnly says whether a managed kind is read by no decision, only to find drift: the
// routers' RBAC, ServiceAccounts, ConfigMaps, PodDisruptionBudgets and the admission policy.
// Their objects only Shardgate writes, and they change when someone edits them by hand, so the
// cache lists them every Options.DriftInterval instead of holding a watch open for each (a watch
// costs two goroutines and a stream for every engaged cluster: eight kinds at a thousand clusters
// are 16,000 goroutines for changes that come a few times a year). Shardgate's own writes of
// them go into the cache as they are made (see writeThrough). The kinds whose state decisions
// read (pods, Deployments, Services, the certificate Secret, the VIP Leases) stay watched.
func RepairOnly(o client.Object) bool {
	switch o.(type) {
	case *corev1.ServiceAccount, *corev1.ConfigMap, *policyv1.PodDisruptionBudget,
		*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding,
		*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding,
		// Routers rewrite their Gateways' status with every route attached: no decision reads it.
		*gatewayv1.GatewayClass, *gatewayv1.Gateway, *gatewayv1beta1.ReferenceGrant:
		return true
	}
	return false
}

// RouteInputs are cached all, each trimmed to what is read: every route kind's routes and what
// deciding them reads (routekinds.Kind.Cached), and namespaces, whose labels shard
// namespaceSelectors match whatever the kind.
func RouteInputs(kinds routekinds.Registry) []client.Object {
	out := []client.Object{&corev1.Namespace{}}
	for _, c := range kinds.Cached() {
		out = append(out, c.Object)
	}
	return out
}

// RoutedIPKinds are cached all (trimmed, TrimRoutedIP) where Shardgate's CRDs are installed: every RoutedIP is a
// request to place, and EndpointSlices (trimmed to where their endpoints run, TrimEndpointSlice)
// say which nodes serve each RoutedIP's Service; every IngressClaim asks for a dedicated shard.
// EndpointSlices are watched on demand, from the first time a cluster's RoutedIPs need them:
// they change with every pod that comes or goes in the user cluster, and most clusters have no
// RoutedIP.
func RoutedIPKinds(caps Capabilities) []client.Object {
	if !caps.CRDs {
		return nil
	}
	return []client.Object{&v1alpha1.RoutedIP{}, &discoveryv1.EndpointSlice{}, &v1alpha1.IngressClaim{}}
}

// UserClusterScheme knows the kinds Shardgate reads and writes in user clusters: client-go's,
// its RoutedIP, and CustomResourceDefinitions (to install RoutedIP's). The engager adds its route
// kinds' types (Options.RouteKinds).
func UserClusterScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(gatewayapi.AddToScheme(s)) // the Gateways Shardgate renders, whatever the route kinds
	return s
}

func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})
}

// routedIPTransforms trim the routed-IP kinds and claims (EndpointSlices: TrimEndpointSlice).
var routedIPTransforms = map[string]toolscache.TransformFunc{"IngressClaim": TrimIngressClaim, "RoutedIP": TrimRoutedIP}

// endpointSliceBudgetFactor: a cluster has an EndpointSlice per Service (more for large ones),
// trimmed to a few hundred bytes each, so their budget is this many times the others'.
const endpointSliceBudgetFactor = 5

// budget is what a cluster's cache may hold of each kind: objects, and bytes stored.
type budget struct {
	objects int
	bytes   int64
}

// cacheKinds are what a user-cluster cache lists and watches, each with its server-side selector,
// trim and budget (b, per kind); handler gives each kind its event handler (nil: none).
func cacheKinds(caps Capabilities, routes routekinds.Registry, b budget,
	handler func(client.Object) toolscache.ResourceEventHandler) []watchcache.Kind {
	if handler == nil {
		handler = func(client.Object) toolscache.ResourceEventHandler { return nil }
	}
	kinds := []watchcache.Kind{{Object: &corev1.Node{}, Transform: TrimNode, Handler: handler(&corev1.Node{}), MaxObjects: b.objects, MaxBytes: b.bytes}}
	for _, k := range ManagedKinds(caps) {
		kind := watchcache.Kind{Object: k, Labels: managedSelector(), Handler: handler(k), Polled: RepairOnly(k), MaxObjects: b.objects, MaxBytes: b.bytes}
		if _, secret := k.(*corev1.Secret); secret {
			// The one Secret Shardgate owns (the routers' certificate), by name and namespace: its
			// role lets it read no other Secret.
			kind.Fields = fields.AndSelectors(fields.OneTermEqualSelector("metadata.name", names.TLSSecretName),
				fields.OneTermEqualSelector("metadata.namespace", names.Namespace))
		}
		kinds = append(kinds, kind)
	}
	// Routes and their inputs: all of them, trimmed.
	ns := &corev1.Namespace{}
	kinds = append(kinds, watchcache.Kind{Object: ns, Handler: handler(ns), Transform: TrimNamespace, MaxObjects: b.objects, MaxBytes: b.bytes})
	for _, c := range routes.Cached() {
		kinds = append(kinds, watchcache.Kind{Object: c.Object, Handler: handler(c.Object), Transform: c.Transform,
			MaxObjects: b.objects, MaxBytes: b.bytes})
	}
	for _, k := range RoutedIPKinds(caps) {
		kind := watchcache.Kind{Object: k, Handler: handler(k), Transform: routedIPTransforms[kindName(k)],
			MaxObjects: b.objects, MaxBytes: b.bytes}
		if _, slice := k.(*discoveryv1.EndpointSlice); slice {
			kind.Transform, kind.OnDemand = TrimEndpointSlice, true
			kind.MaxObjects, kind.MaxBytes = b.objects*endpointSliceBudgetFactor, b.bytes*endpointSliceBudgetFactor
		}
		kinds = append(kinds, kind)
	}
	return kinds
}

// kindName is the Go type name of a kind's object ("Ingress").
func kindName(o client.Object) string {
	return reflect.TypeOf(o).Elem().Name()
}

// clusterScoped are the kinds Shardgate reads or writes that have no namespace, but for those
// of route kinds (routekinds.Cached.ClusterScoped).
var clusterScoped = map[string]bool{
	"Node": true, "Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "SelfSubjectReview": true,
	"GatewayClass":             true,
	"CustomResourceDefinition": true,
}

// staticRESTMapper maps exactly the kinds Shardgate uses in user clusters. It needs no discovery,
// so building a client or an informer never waits on a user cluster's API server (a server that
// accepts connections and never answers would otherwise hold the caller).
func staticRESTMapper(scheme *runtime.Scheme, routes routekinds.Registry) (meta.RESTMapper, error) {
	rootScoped := map[reflect.Type]bool{}
	for _, c := range routes.Cached() {
		rootScoped[reflect.TypeOf(c.Object)] = c.ClusterScoped
	}
	objs := append(ManagedKinds(Capabilities{AdmissionPolicy: true,
		GatewayAPI: gatewayapi.Availability{Served: true, ListenerSet: true}}), RouteInputs(routes)...)
	objs = append(objs, RoutedIPKinds(Capabilities{CRDs: true})...)
	objs = append(objs, &corev1.Node{}, &corev1.Event{}, &authenticationv1.SelfSubjectReview{}, &apiextensionsv1.CustomResourceDefinition{})
	var gvs []schema.GroupVersion
	var gvks []schema.GroupVersionKind
	root := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return nil, err
		}
		gvks = append(gvks, gvk)
		gvs = append(gvs, gvk.GroupVersion())
		root[gvk] = clusterScoped[gvk.Kind] || rootScoped[reflect.TypeOf(o)]
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, gvk := range gvks {
		scope := meta.RESTScopeNamespace
		if root[gvk] {
			scope = meta.RESTScopeRoot
		}
		if plural, ok := irregularPlurals[gvk.Kind]; ok {
			singular := gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind))
			m.AddSpecific(gvk, gvk.GroupVersion().WithResource(plural), singular, scope)
			continue
		}
		m.Add(gvk, scope)
	}
	return m, nil
}

// irregularPlurals are the resources of kinds whose plural the mapper's guess gets wrong (it makes
// "gatewaies" of Gateway).
var irregularPlurals = map[string]string{"Gateway": "gateways"}
