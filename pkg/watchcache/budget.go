package watchcache

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// A user cluster decides how many objects it holds and how large they are: a tenant with
// thousands of Ingresses, or an owner whose API server streams objects without end, would
// otherwise grow the cache until the controller runs out of memory (and, with replicas, the next
// replica that engages the cluster too). So each kind may have a budget (Kind.MaxObjects) and
// every object a size limit (Options.MaxObjectBytes), both checked while a list or watch is
// read, one object at a time: a list that goes past them stops there, its objects are dropped,
// and the store keeps what it held before.

// BudgetError says that a kind went past its budget: more than Limit objects, (Bytes) one
// object larger than Limit bytes, or (Stored) its objects taking more than Limit bytes.
type BudgetError struct {
	Kind   string
	Limit  int64
	Bytes  bool
	Stored bool
}

func (e *BudgetError) Error() string {
	switch {
	case e.Bytes:
		return fmt.Sprintf("a %s larger than %d bytes", e.Kind, e.Limit)
	case e.Stored:
		return fmt.Sprintf("more than %d bytes of %s objects", e.Limit, e.Kind)
	}
	return fmt.Sprintf("more than %d %s objects", e.Limit, e.Kind)
}

// errObjectTooLarge is a boundedReader's error once one object's bytes went past its limit.
var errObjectTooLarge = errors.New("object too large")

// boundedReader fails a read once more than max bytes were read since the last reset (max 0: no
// limit). The decoders reset it at each object, so it bounds what one object may take to
// decode, whatever the server sends.
type boundedReader struct {
	r       io.Reader
	n, max  int64
	tripped bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.max > 0 {
		if b.n >= b.max {
			b.tripped = true
			return 0, errObjectTooLarge
		}
		p = p[:min(int64(len(p)), b.max-b.n)]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *boundedReader) reset() { b.n = 0 }

// overBudget turns err into the kind's BudgetError when a bounded read tripped.
func (in *informer) overBudget(b *boundedReader, err error) error {
	if b.tripped {
		return &BudgetError{Kind: in.gvk.Kind, Limit: b.max, Bytes: true}
	}
	return err
}

// countOver is the kind's BudgetError when holding n objects is more than its budget.
func (in *informer) countOver(n int) error {
	if in.kind.MaxObjects > 0 && n > in.kind.MaxObjects {
		return &BudgetError{Kind: in.gvk.Kind, Limit: int64(in.kind.MaxObjects)}
	}
	return nil
}

// bytesOver is the kind's BudgetError when its objects taking total bytes is more than its byte
// budget.
func (in *informer) bytesOver(total int64) error {
	if in.kind.MaxBytes > 0 && total > in.kind.MaxBytes {
		return &BudgetError{Kind: in.gvk.Kind, Limit: in.kind.MaxBytes, Stored: true}
	}
	return nil
}

// storedSize estimates what a stored object takes: its protobuf size where its type has one
// (every Kubernetes type: a walk of the trimmed object, no allocation), else the raw bytes it was
// decoded from (Shardgate's own CRD types, trimmed little).
func storedSize(o any, raw int64) int64 {
	if s, ok := o.(interface{ Size() int }); ok {
		return int64(s.Size())
	}
	return raw
}

// recount records the sizes of a list's objects, where the kind has a byte budget.
func (in *informer) recount(objs []any, sizes []int64) {
	if in.kind.MaxBytes == 0 {
		return
	}
	in.sizes, in.bytes = make(map[string]int64, len(objs)), 0
	for i, o := range objs {
		k, _ := toolscache.MetaNamespaceKeyFunc(o)
		in.sizes[k] = sizes[i]
		in.bytes += sizes[i]
	}
}

// resize records that the object of key takes size bytes now (0: gone), unless that puts the
// kind over its byte budget.
func (in *informer) resize(key string, size int64) error {
	if in.kind.MaxBytes == 0 {
		return nil
	}
	next := in.bytes - in.sizes[key] + size
	if err := in.bytesOver(next); err != nil && size > 0 {
		return err
	}
	if in.sizes == nil {
		in.sizes = map[string]int64{}
	}
	if size == 0 {
		delete(in.sizes, key)
	} else {
		in.sizes[key] = size
	}
	in.bytes = next
	return nil
}

// budgetBackoff: a kind over its budget is listed again after Options.BudgetRetry, doubling up
// to budgetBackoffFactor times that, jittered: the cluster is not fixed in a moment, and each
// try costs a list up to the budget.
const budgetBackoffFactor = 16

// nextBudgetDelay doubles delay within [retry, retry*budgetBackoffFactor].
func nextBudgetDelay(delay, retry time.Duration) time.Duration {
	return min(max(2*delay, retry), retry*budgetBackoffFactor)
}

func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }

// budget tells Options.OnBudget of a kind going over its budget (err) or back within it (nil).
func (c *Cache) budget(in *informer, err error) {
	if err != nil {
		in.over.Store(true)
	} else if !in.over.CompareAndSwap(true, false) {
		return
	}
	if c.opts.OnBudget != nil {
		c.opts.OnBudget(in.gvk.Kind, err)
	}
}
