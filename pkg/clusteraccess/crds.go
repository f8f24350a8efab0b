package clusteraccess

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// installRoutedIPCRD applies the RoutedIP CRD in the user cluster (server-side apply, so a newer
// Shardgate's schema replaces an older one) and waits until it is established, so that the
// cache's RoutedIP informer lists at once. A role that may not install CRDs (an older
// user-cluster RBAC) is no failure: the cluster simply has no routed IPs (false).
func (c *engaged) installRoutedIPCRD() (bool, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(routedip.CRD, &u.Object); err != nil {
		return false, fmt.Errorf("the embedded RoutedIP CRD: %w", err)
	}
	u.SetLabels(map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue})
	cl, err := client.New(withTimeout(c.cfg, c.e.opts.ConnectTimeout), client.Options{Scheme: c.e.opts.Scheme, Mapper: c.e.mapper})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 2*c.e.opts.ConnectTimeout)
	defer cancel()
	err = cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership)
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cl.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
