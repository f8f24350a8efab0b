package clusteraccess

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/watchcache"
)

// writeThrough is a user cluster's writer that tells the cluster's cache of every successful write
// of a kind it polls (RepairOnly), with the server's answer, so that the next reconcile reads
// what was just written instead of applying it again until the next drift check. Writes of
// watched kinds come back through their watch; the cache ignores them here.
type writeThrough struct {
	client.Client
	cache *watchcache.Cache
}

// unstructuredContent is what controller-runtime's apply configuration made from an unstructured
// object offers (it embeds the object, which the apply fills with the server's answer).
type unstructuredContent interface {
	UnstructuredContent() map[string]any
}

func (w writeThrough) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := w.Client.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	if u, ok := obj.(unstructuredContent); ok {
		w.cache.Remember(&unstructured.Unstructured{Object: u.UnstructuredContent()})
	}
	return nil
}

func (w writeThrough) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return w.remember(obj, w.Client.Create(ctx, obj, opts...))
}

func (w writeThrough) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return w.remember(obj, w.Client.Update(ctx, obj, opts...))
}

func (w writeThrough) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return w.remember(obj, w.Client.Patch(ctx, obj, patch, opts...))
}

func (w writeThrough) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := w.Client.Delete(ctx, obj, opts...)
	if err == nil || apierrors.IsNotFound(err) {
		// Gone, or going (the next drift check sees any finalizer holding it).
		w.cache.Forget(obj)
	}
	return err
}

func (w writeThrough) remember(obj client.Object, err error) error {
	if err == nil {
		w.cache.Remember(obj)
	}
	return err
}
