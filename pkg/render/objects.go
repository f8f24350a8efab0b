package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

func managedLabels(shard string) map[string]string {
	l := map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, "app.kubernetes.io/name": "shardgate-router"}
	if shard != "" {
		l[v1alpha1.ShardLabel] = shard
		l["app.kubernetes.io/instance"] = shard
	}
	return l
}

// SharedObjects are the objects every shard of a flavour uses: the namespace and the flavour's
// IngressClass.
func SharedObjects(f Flavour) ([]*unstructured.Unstructured, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.Namespace, Labels: managedLabels("")}}
	class := &networkingv1.IngressClass{
		// Whether it is the cluster's default is decided apart (DecideDefaultClass).
		ObjectMeta: metav1.ObjectMeta{Name: f.IngressClass().Name, Labels: managedLabels("")},
		Spec:       networkingv1.IngressClassSpec{Controller: f.IngressClass().Controller},
	}
	return toUnstructured(
		Object{corev1.SchemeGroupVersion.WithKind("Namespace"), ns},
		Object{networkingv1.SchemeGroupVersion.WithKind("IngressClass"), class},
	)
}

// toUnstructured turns typed objects into apply-ready unstructured ones: typed structs read
// better in a renderer, but server-side apply must not claim fields the renderer never set, so
// status and null/empty leftovers (creationTimestamp: null, status: {}) are dropped.
func toUnstructured(objs ...Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Obj)
		if err != nil {
			return nil, fmt.Errorf("convert %s: %w", o.GVK.Kind, err)
		}
		delete(m, "status")
		prune(m)
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(o.GVK)
		out = append(out, u)
	}
	return out, nil
}

// prune removes nil values and empty maps left by zero-valued typed fields, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
