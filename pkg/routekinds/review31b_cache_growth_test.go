package routekinds

import (
	"fmt"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReview31bSharedConfigAnnotationsGrowTheCache (review31b, tenant T): trimIngress now keeps
// every annotation whose name (after any prefix) a flavour reads as shared configuration, with its
// value, under any number of prefixes. Allocation reads only the names (readAnnotation), and
// needs one of them to refuse and name it. In a cluster without an HAProxy shard no admission
// policy refuses them, so T fills each Ingress's 256 KiB annotation allowance with, e.g., one
// 200 KiB value of x.example/route-acl, or thousands of pN.example/route-acl keys: all of it stays
// in the seed's cache (counted against --max-bytes-per-kind "once trimmed", freezing the whole
// cluster for every tenant sooner), and every allocation pass sorts those keys per route.
// security.md: "unread fields are not cached".
// Expected: the trimmed Ingress keeps at most one such key, without its value (a bounded few
// hundred bytes, whatever T wrote).
func TestReview31bSharedConfigAnnotationsGrowTheCache(t *testing.T) {
	KeepSharedConfigAnnotations("route-acl") // what render's init registers (this package cannot import render)
	size := func(m map[string]string) (n int) {
		for k, v := range m {
			n += len(k) + len(v)
		}
		return n
	}
	big := map[string]string{"x.example/route-acl": strings.Repeat("a", 200<<10)}
	many := map[string]string{}
	for i := range 8000 {
		many[fmt.Sprintf("p%d.example/route-acl", i)] = "v"
	}
	for name, ann := range map[string]map[string]string{"one large value": big, "many prefixes": many} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "i", Annotations: ann}}
		out, err := trimIngress(ing)
		if err != nil {
			t.Fatal(err)
		}
		kept := out.(*networkingv1.Ingress).Annotations
		if n := size(kept); n > 1024 || len(kept) > 1 {
			t.Errorf("%s: the cache keeps %d annotations, %d bytes, of which allocation reads one name", name, len(kept), n)
		}
	}
}
