package shards

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
)

// applyDesired applies the cluster-wide objects first (the namespace, the certificate Secret,
// the users' ConfigMap, the admission policy: every shard and every tenant depends on them),
// then each shard's objects. A shard that fails (its render, or an object the API server
// refuses, say a claim's Deployment) is recorded in failed and the next shard is still applied:
// one shard never keeps renewals, the policy or the other shards from reaching the cluster. A
// cluster-wide object that fails stops the pass.
func applyDesired(d render.Desired, apply func(*unstructured.Unstructured) error) (failed map[string]error, err error) {
	for _, o := range d.Cluster {
		if err := apply(o); err != nil {
			return nil, err
		}
	}
	for _, s := range d.Shards {
		err := s.Err
		for _, o := range s.Objects {
			if err != nil {
				break
			}
			err = apply(o)
		}
		if err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[s.Name] = err
		}
	}
	return failed, nil
}

// applyTenants applies each tenant namespace's objects, after everything else: one that fails
// (a namespace being deleted, an object of the tenant's in the way) holds nothing else back. It
// returns why each failed namespace failed.
func applyTenants(d render.Desired, apply func(*unstructured.Unstructured) error) map[string]error {
	var failed map[string]error
	for _, ns := range slices.Sorted(maps.Keys(d.Tenants)) {
		for _, o := range d.Tenants[ns] {
			if err := apply(o); err != nil {
				if failed == nil {
					failed = map[string]error{}
				}
				failed[ns] = err
				break
			}
		}
	}
	return failed
}

// unrendered are the shards that could not be rendered (their live objects stay).
func unrendered(d render.Desired) map[string]bool {
	out := map[string]bool{}
	for _, s := range d.Shards {
		if s.Err != nil {
			out[s.Name] = true
		}
	}
	return out
}

// failureError names every failed shard, and the IngressClaim of a claimed one, in shard order.
func failureError(shards []v1alpha1.ShardSpec, failed map[string]error) error {
	var errs []error
	for _, s := range shards {
		err, ok := failed[s.Name]
		if !ok {
			continue
		}
		who := "shard " + s.Name
		if s.Claim != "" {
			who += " (IngressClaim " + s.Claim + ")"
		}
		errs = append(errs, fmt.Errorf("%s: %w", who, err))
	}
	msg := make([]string, len(errs))
	for i, e := range errs {
		msg[i] = e.Error()
	}
	return shardFailures{msg: strings.Join(msg, "; ") + "; the other shards, the certificate and the admission policy are applied", errs: errs}
}

// shardFailures is the failed shards' errors in one message (each stays reachable: errors.Is/As).
type shardFailures struct {
	msg  string
	errs []error
}

func (e shardFailures) Error() string   { return e.msg }
func (e shardFailures) Unwrap() []error { return e.errs }
