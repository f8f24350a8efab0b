package clusteraccess

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// BenchmarkNodeCacheMemory measures the heap one cached Node costs, with our transform (TrimNode
// after stripping managedFields, as the user-cluster caches run) and as a plain full-object cache.
// Nodes are decoded from JSON one by one, as an informer does, so no two share memory.
func BenchmarkNodeCacheMemory(b *testing.B) {
	const nodes = 2000
	raw := make([][]byte, nodes)
	for i := range raw {
		var err error
		if raw[i], err = json.Marshal(realisticNode(i)); err != nil {
			b.Fatal(err)
		}
	}
	var full, trimmed float64
	for range b.N {
		full = heapPerObject(b, raw, func(n *corev1.Node) any { return n })
		trimmed = heapPerObject(b, raw, func(n *corev1.Node) any {
			n.ManagedFields = nil
			out, _ := TrimNode(n)
			return out
		})
	}
	b.ReportMetric(full, "B/node-full")
	b.ReportMetric(trimmed, "B/node-trimmed")
	b.ReportMetric(full/trimmed, "x-smaller")
	fmt.Printf("node cache memory: full %.0f B/node, trimmed %.0f B/node, %.1fx smaller (%d nodes, 50 images each)\n",
		full, trimmed, full/trimmed, nodes)
}

func heapPerObject(b *testing.B, raw [][]byte, transform func(*corev1.Node) any) float64 {
	b.Helper()
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	before := heapInUse()
	for _, r := range raw {
		n := &corev1.Node{}
		if err := json.Unmarshal(r, n); err != nil {
			b.Fatal(err)
		}
		if err := store.Add(transform(n)); err != nil {
			b.Fatal(err)
		}
	}
	after := heapInUse()
	runtime.KeepAlive(store)
	return float64(after-before) / float64(len(raw))
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
