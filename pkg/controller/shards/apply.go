package shards

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/render"
)

// upToDate reports whether the cached object is what Shardgate last applied for desired (same
// applied hash) and still holds every field desired sets, so applying again would change
// nothing. Skipping those applies keeps a reconcile of an unchanged cluster free of API writes;
// an edit of a field Shardgate sets, a deletion, or a change of what Shardgate renders (a field
// added or removed) makes them differ, and the apply that repairs it follows.
func upToDate(ctx context.Context, rd client.Reader, scheme *runtime.Scheme, desired *unstructured.Unstructured) (bool, error) {
	obj, err := scheme.New(desired.GroupVersionKind())
	if err != nil {
		return false, fmt.Errorf("%s: %w", desired.GetKind(), err)
	}
	cobj, ok := obj.(client.Object)
	if !ok {
		return false, nil
	}
	if err := rd.Get(ctx, client.ObjectKeyFromObject(desired), cobj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if cobj.GetDeletionTimestamp() != nil || cobj.GetAnnotations()[render.AppliedHashAnnotation] != desired.GetAnnotations()[render.AppliedHashAnnotation] {
		return false, nil
	}
	actual, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cobj)
	if err != nil {
		return false, err
	}
	want := desired.DeepCopy().Object
	delete(want, "apiVersion")
	delete(want, "kind")
	return subset(want, actual), nil
}

// subset reports whether every value set in want is present and equal in have. Maps may have
// more keys in have (server defaults); lists must have the same length, element by element.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}
