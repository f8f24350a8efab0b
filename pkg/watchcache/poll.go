package watchcache

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// poll lists the polled kinds every PollInterval (within 10 %) until ctx ends. A kind whose list
// failed is listed again backing off from 0.8 to 30 s; the others wait for the next round.
func (c *Cache) poll(ctx context.Context, kinds []*informer) {
	due, delay := kinds, time.Duration(0)
	for {
		var failed []*informer
		for _, in := range due {
			if _, err := in.list(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				if be := (*BudgetError)(nil); errors.As(err, &be) {
					c.budget(in, err) // listed again at the next round, not backing off from 0.8 s
					continue
				}
				c.fail(in.gvk.Kind, err)
				failed = append(failed, in)
				continue
			}
			c.listed(in)
		}
		wait := c.opts.PollInterval*9/10 + rand.N(c.opts.PollInterval/5+1)
		due = kinds
		if len(failed) > 0 {
			delay = min(max(2*delay, backoffMin), backoffMax)
			wait, due = delay/2+rand.N(delay/2), failed
		} else {
			delay = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Remember stores obj, which the caller has just written (the server's answer to the write),
// when its kind is polled, so that reads see the write before the next list does; watched kinds
// hear of it from their watch, and obj is ignored. An unstructured obj is converted to the kind's
// type. The handler is not told: the writer knows. An object the kind's label selector does not
// match is forgotten instead (the next list would not hold it either).
func (c *Cache) Remember(obj runtime.Object) {
	in, typed := c.polledCopy(obj)
	if in == nil {
		return
	}
	if m, ok := typed.(interface{ GetLabels() map[string]string }); ok && in.kind.Labels != nil && !in.kind.Labels.Matches(labels.Set(m.GetLabels())) {
		c.Forget(obj)
		return
	}
	if o, err := in.trim(typed); err == nil {
		_ = in.store.Update(o) // an indexer's Update fails only for an object without a key
	}
}

// Forget drops obj, which the caller has just deleted, from a polled kind's store.
func (c *Cache) Forget(obj runtime.Object) {
	if in, typed := c.polledCopy(obj); in != nil {
		_ = in.store.Delete(typed)
	}
}

// polledCopy is obj's polled kind and a typed copy of obj; nil when obj's kind is not polled here.
func (c *Cache) polledCopy(obj runtime.Object) (*informer, runtime.Object) {
	u, isUnstructured := obj.(runtime.Unstructured)
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !isUnstructured {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, c.opts.Scheme); err != nil {
			return nil, nil
		}
	}
	in, ok := c.kinds[gvk]
	if !ok || !in.kind.Polled {
		return nil, nil
	}
	if !isUnstructured {
		return in, obj.DeepCopyObject()
	}
	typed, err := c.opts.Scheme.New(gvk)
	if err != nil {
		return nil, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err != nil {
		return nil, nil
	}
	return in, typed
}
