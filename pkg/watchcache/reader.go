package watchcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

var _ client.Reader = &Cache{}

// ErrNotHeld is (errors.Is) the error of a read of a kind the cache does not hold: never a
// request to the server. A user-cluster cache leaves out the kinds its cluster does not serve (a
// route kind's input an older Gateway API lacks, say), so a reader can tell "not there" from a
// failure.
var ErrNotHeld = errors.New("the cache does not hold the kind")

type notHeld struct{ kind string }

func (e notHeld) Error() string        { return "the cache does not hold " + e.kind }
func (e notHeld) Is(target error) bool { return target == ErrNotHeld }

// Get copies the stored object named key into obj; NotFound when there is none. A kind the
// cache does not hold is an error, never a request.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, c.opts.Scheme)
	if err != nil {
		return err
	}
	in, ok := c.kinds[gvk]
	if !ok {
		return notHeld{kind: gvk.Kind}
	}
	if err := c.ready(ctx, in); err != nil {
		return err
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	item, exists, err := in.store.GetByKey(k)
	if err != nil {
		return err
	}
	if !exists {
		return apierrors.NewNotFound(in.mapping.Resource.GroupResource(), key.Name)
	}
	out, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("the cache holds a %T for %s", item, gvk.Kind)
	}
	dst, src := reflect.ValueOf(obj), reflect.ValueOf(out.DeepCopyObject())
	if dst.Type() != src.Type() {
		return fmt.Errorf("the cache holds a %s, not a %s", src.Type(), dst.Type())
	}
	dst.Elem().Set(src.Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// List copies the stored objects of the list's kind into list, in one namespace when asked, and
// those matching a label selector when given. Field selectors are refused.
//
// With client.UnsafeDisableDeepCopy the items are shallow copies of the stored objects (as
// controller-runtime's cache gives them): their maps, slices and pointers are the cache's, for
// reading only. A pass over every route of a cluster lists them on each change of one; deep
// copies of 10,000 Ingresses every time were most of the controller's CPU while they were
// allocated (BenchmarkAllocation).
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	shared := lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		return fmt.Errorf("the cache does not select by field (%s)", lo.FieldSelector)
	}
	gvk, err := apiutil.GVKForObject(list, c.opts.Scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	in, ok := c.kinds[gvk]
	if !ok {
		return notHeld{kind: gvk.Kind}
	}
	if err := c.ready(ctx, in); err != nil {
		return err
	}
	var items []any
	if lo.Namespace != "" {
		items, err = in.store.ByIndex(toolscache.NamespaceIndex, lo.Namespace)
		if err != nil {
			return err
		}
	} else {
		items = in.store.List()
	}
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		o, ok := it.(runtime.Object)
		if !ok {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Empty() {
			m, err := meta.Accessor(o)
			if err != nil || !lo.LabelSelector.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		if shared {
			out = append(out, o)
			continue
		}
		cp := o.DeepCopyObject()
		cp.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, cp)
	}
	if err := meta.SetList(list, out); err != nil {
		return err
	}
	if shared {
		// A typed list's items are copies of the stored structs (SetList), whose kind is theirs to
		// set; a list of pointers holds the stored objects themselves, never written.
		i := 0
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if item != out[i] {
				item.GetObjectKind().SetGroupVersionKind(gvk)
			}
			i++
			return nil
		})
	}
	if rv, ok := in.lastRV.Load().(string); ok {
		list.SetResourceVersion(rv)
	}
	return nil
}
