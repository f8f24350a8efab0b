package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// AppliedHashAnnotation carries, on every object Shardgate applies, a hash of what it applied.
// A field dropped from a shard's spec (a nodeSelector, a toleration, a map key) changes the hash,
// so the object is applied again and server-side apply removes the field: comparing the cached
// object with the desired one field by field cannot see a field that is no longer desired.
const AppliedHashAnnotation = "shardgate.io/applied-hash"

// DesiredInput is what the shard controller renders from.
type DesiredInput struct {
	ClusterDomain string
	TTL           int64
	Shards        []v1alpha1.ShardSpec
	// ShardgateUser is who Shardgate is in the cluster; the admission policy exempts only it.
	ShardgateUser string
	// AdmissionPolicy: the cluster serves ValidatingAdmissionPolicy (else none is rendered).
	AdmissionPolicy bool
	// TLS, when set, gives every router the cluster's certificate.
	TLS *TLSInput
	// VIP per VIP shard name.
	VIP map[string]*VIPInput
	// Canary gives every shard its canary route.
	Canary bool
}

// DesiredObjects renders the shared objects, every shard's objects, the users' info ConfigMap,
// and the admission policy that reserves allocation fields to Shardgate, each stamped with the
// hash of its own content.
func DesiredObjects(in DesiredInput) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	sharedDone := map[v1alpha1.Flavour]bool{}
	for _, s := range in.Shards {
		f, ok := FlavourFor(s.Flavour)
		if !ok {
			return nil, fmt.Errorf("shard %s: unknown flavour %q", s.Name, s.Flavour)
		}
		if !sharedDone[s.Flavour] {
			shared, err := SharedObjects(f)
			if err != nil {
				return nil, err
			}
			out = append(out, shared...)
			sharedDone[s.Flavour] = true
		}
		objs, err := f.Render(RenderInput{Domain: names.ShardDomain(s.Name, in.ClusterDomain), Shard: s, DNSTTL: in.TTL, TLS: in.TLS, VIP: in.VIP[s.Name], Canary: in.Canary})
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", s.Name, err)
		}
		out = append(out, objs...)
	}
	if in.TLS != nil {
		tls, err := TLSObjects(in.TLS)
		if err != nil {
			return nil, err
		}
		out = append(out, tls...)
	}
	info, err := UserInfo(in.ClusterDomain, in.Shards, in.TLS != nil)
	if err != nil {
		return nil, err
	}
	out = append(out, info)
	if in.AdmissionPolicy {
		policy, err := AdmissionPolicy(in.ShardgateUser)
		if err != nil {
			return nil, err
		}
		out = append(out, policy...)
	}
	out = dedupe(out)
	for _, o := range out {
		if err := StampHash(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StampHash sets AppliedHashAnnotation to the hash of the object without it.
func StampHash(o *unstructured.Unstructured) error {
	ann := o.GetAnnotations()
	delete(ann, AppliedHashAnnotation)
	if len(ann) == 0 {
		ann = nil
	}
	o.SetAnnotations(ann)
	b, err := json.Marshal(o.Object) // maps marshal with sorted keys: deterministic
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AppliedHashAnnotation] = hex.EncodeToString(sum[:16])
	o.SetAnnotations(ann)
	return nil
}

// dedupe keeps the first of objects with the same kind and name (the shared ClusterRole is
// rendered once per shard).
func dedupe(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[string]bool{}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		k := ObjKey(o.GetKind(), o.GetNamespace(), o.GetName())
		if !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	return out
}

// ObjKey identifies a rendered object by kind, namespace and name.
func ObjKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }
