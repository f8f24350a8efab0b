package clusteraccess

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/render"
)

// gatewayAPI finds what the cluster offers of Gateway API and installs the release's CRDs where
// gatewayapi.Decide says (absent, or Shardgate's and outdated), once per engagement. It reads each
// CRD's metadata by name (the role may read no other CRD) and discovery's served versions, applies
// under Shardgate's field owner without forcing (a field someone else wrote in between is a
// conflict, never taken over) and with the resourceVersion read (an edit in between is one too),
// and waits until discovery serves what it applied (discovery lists a CRD's version once it is
// Established), so the cache's check of served kinds that follows sees it. A role that may not
// read or write the CRDs, or a refused install, is no failure of the engagement: the Availability
// says so and nothing of Gateway API is used. Only what may pass (a conflict, throttling, a server
// or transport failure) is an error, and the first contact is tried again.
func (c *engaged) gatewayAPI(disc *groupVersions) (gatewayapi.Availability, []string, error) {
	if !c.settings.GatewayAPI {
		return gatewayapi.Decide(gatewayapi.Input{}).Availability, nil, nil
	}
	desired, err := gatewayCRDs()
	if err != nil {
		return gatewayapi.Availability{}, nil, err
	}
	o := c.e.opts
	cl, err := client.New(withTimeout(c.cfg, o.ConnectTimeout), client.Options{HTTPClient: c.httpClient(o.ConnectTimeout),
		Scheme: o.Scheme, Mapper: c.e.mapper})
	if err != nil {
		return gatewayapi.Availability{}, nil, err
	}
	// Applying eight CRDs (~1.2 MB) and waiting for them takes longer than one contact's timeout.
	ctx, cancel := context.WithTimeout(c.ctx, 3*o.ConnectTimeout)
	defer cancel()
	in, err := readGatewayAPI(ctx, cl, disc, desired)
	if err != nil {
		return gatewayapi.Availability{}, nil, err
	}
	d := gatewayapi.Decide(in)
	for _, name := range d.Apply {
		u := desired.crds[name].DeepCopy()
		if live, ok := in.Live[name]; ok {
			u.SetResourceVersion(live.ResourceVersion) // an upgrade: only of what was read
		}
		err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldOwner))
		if refused, a := refusal(err); refused {
			return a, nil, nil
		}
		if err != nil {
			return gatewayapi.Availability{}, nil, err
		}
	}
	if len(d.Apply) > 0 {
		if err := waitServed(ctx, disc, d.Apply); err != nil {
			return gatewayapi.Availability{}, nil, err
		}
	}
	a := d.Availability
	if a.ListenerSet && a.RoutersServe() {
		forbidden, err := forbiddenForListenerSets(ctx, disc.rc)
		if err != nil {
			return gatewayapi.Availability{}, nil, err
		}
		if len(forbidden) > 0 {
			// A cache that may not list a kind never syncs, and a cluster that never syncs is
			// unreachable: a cluster registered with an older least-privilege role keeps serving
			// everything else, told why ListenerSets are not.
			a.ListenerSet = false
			a.Reason = v1alpha1.ReasonListenerSetUnavailable
			a.Message = "Shardgate may not list ListenerSets or ReferenceGrants in this cluster (apply this release's " +
				"config/user-cluster/rbac.yaml; Shardgate asks again every 30 s): Gateway API routes are " +
				"served, ListenerSets are not"
		}
		return a, forbidden, nil
	}
	return a, nil, nil
}

// forbiddenForListenerSets are the list paths of what serving ListenerSets takes that Shardgate
// may not read: the ListenerSets, and the ReferenceGrants it renders (cached like its other
// objects). Raw paths: the REST mapper may not know CRDs installed a moment ago.
func forbiddenForListenerSets(ctx context.Context, rc rest.Interface) ([]string, error) {
	var out []string
	for _, path := range []string{"/apis/" + gatewayapi.Group + "/v1/listenersets",
		"/apis/" + gatewayapi.Group + "/v1beta1/referencegrants"} {
		may, err := mayList(ctx, rc, path)
		if err != nil {
			return nil, err
		}
		if !may {
			out = append(out, path)
		}
	}
	return out, nil
}

// readGatewayAPI gathers the decision's input: the metadata of each CRD of the set (by name), and
// the versions discovery serves each at.
func readGatewayAPI(ctx context.Context, cl client.Client, disc *groupVersions, desired *gatewayDesired) (gatewayapi.Input, error) {
	in := gatewayapi.Input{Enabled: true, Live: map[string]gatewayapi.LiveCRD{}, Want: desired.hashes}
	for _, name := range gatewayapi.CRDNames() {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		err := cl.Get(ctx, client.ObjectKey{Name: name}, m)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			return gatewayapi.Input{Enabled: true, Forbidden: true}, nil
		case err != nil:
			return in, err
		}
		in.Live[name] = gatewayapi.LiveCRD{ObjectMeta: m.ObjectMeta, Hash: m.Annotations[render.AppliedHashAnnotation]}
	}
	served, err := servedVersions(ctx, disc)
	if err != nil {
		return in, err
	}
	for name, l := range in.Live {
		l.Served = served[name]
		in.Live[name] = l
	}
	return in, nil
}

// servedVersions are, by CRD name, the versions of the group (gatewayapi.Versions) discovery
// lists each CRD's resource at.
func servedVersions(ctx context.Context, disc *groupVersions) (map[string][]string, error) {
	out := map[string][]string{}
	for _, v := range gatewayapi.Versions() {
		kinds, err := disc.kinds(ctx, schema.GroupVersion{Group: gatewayapi.Group, Version: v})
		if err != nil {
			return nil, err
		}
		for _, resource := range kinds {
			name := resource + "." + gatewayapi.Group
			out[name] = append(out[name], v)
		}
	}
	return out, nil
}

// waitServed waits until discovery lists every applied CRD at the version Shardgate uses it at.
func waitServed(ctx context.Context, disc *groupVersions, applied []string) error {
	for {
		for _, v := range gatewayapi.Versions() {
			disc.forget(schema.GroupVersion{Group: gatewayapi.Group, Version: v})
		}
		served, err := servedVersions(ctx, disc)
		if err != nil {
			return err
		}
		waiting := false
		for _, k := range gatewayapi.Kinds {
			waiting = waiting || slices.Contains(applied, k.CRD) && !slices.Contains(served[k.CRD], k.Version)
		}
		if !waiting {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for Gateway API's CRDs to be served: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// refusal says whether err is the API server refusing the install for good (its rights or an
// admission policy: Forbidden; an invalid object or another 4xx: InstallFailed), with the
// Availability it makes. A conflict (someone wrote the CRD since it was read) and throttling pass:
// they are errors, and the first contact is tried again.
func refusal(err error) (bool, gatewayapi.Availability) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false, gatewayapi.Availability{}
	}
	d, _ := Describe(err)
	switch code := int(status.Status().Code); {
	case code == http.StatusForbidden:
		return true, gatewayapi.Refused(v1alpha1.ReasonGatewayAPIForbidden, d)
	case code == http.StatusConflict || code == http.StatusTooManyRequests || code < 400 || code > 499:
		return false, gatewayapi.Availability{}
	}
	return true, gatewayapi.Refused(v1alpha1.ReasonGatewayAPIInstallFailed, d)
}

// gatewayDesired are the release's CRDs as Shardgate applies them: labelled as its own and stamped
// with their content's hash, like Shardgate's own CRDs.
type gatewayDesired struct {
	crds   map[string]*unstructured.Unstructured
	hashes map[string]string
}

var gatewayCRDs = sync.OnceValues(func() (*gatewayDesired, error) {
	crds, err := gatewayapi.CRDs()
	if err != nil {
		return nil, err
	}
	out := &gatewayDesired{crds: crds, hashes: map[string]string{}}
	for name, u := range crds {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.ManagedByLabel] = v1alpha1.ManagedByValue
		u.SetLabels(labels)
		if err := render.StampHash(u); err != nil {
			return nil, fmt.Errorf("the embedded CRD %s: %w", name, err)
		}
		out.hashes[name] = u.GetAnnotations()[render.AppliedHashAnnotation]
	}
	return out, nil
})
