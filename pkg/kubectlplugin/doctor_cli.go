package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// doctorProbe is the label doctor looks up under each shard domain (any name under it answers):
// with an underscore, which no shard name (a DNS label) has, so no shard's own domain is ever
// this name. Fully qualified (the trailing dot): no search domain is appended.
const doctorProbe = "_shardgate-doctor"

// doctor diagnoses the named cluster (NAMESPACE/NAME, or NAME in namespace), looking its shard
// names up; or every cluster with something wrong, from their status alone (a thousand
// clusters' lookups would take minutes; the DNS controller verifies them already).
func doctor(ctx context.Context, c client.Client, args []string, namespace string, lookup Lookup) ([]Diagnosis, error) {
	now := time.Now()
	switch len(args) {
	case 0:
		var list v1alpha1.ClusterIngressList
		if err := c.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing ClusterIngresses (is this the seed?): %w", err)
		}
		out := []Diagnosis{}
		for i := range list.Items {
			if d := Diagnose(&list.Items[i], now, nil); len(d.Findings) > 0 {
				out = append(out, d)
			}
		}
		return out, nil
	case 1:
		key := types.NamespacedName{Namespace: namespace, Name: args[0]}
		if ns, name, ok := strings.Cut(args[0], "/"); ok {
			key = types.NamespacedName{Namespace: ns, Name: name}
		}
		ci := &v1alpha1.ClusterIngress{}
		if err := c.Get(ctx, key, ci); err != nil {
			return nil, fmt.Errorf("ClusterIngress %s (is this the seed?): %w", key, err)
		}
		return []Diagnosis{Diagnose(ci, now, lookUpShards(ci, lookup))}, nil
	}
	return nil, errors.New("usage: kubectl shardgate doctor [NAMESPACE/NAME]")
}

// lookUpShards asks for every shard's probe name at once (each lookup bounded by the resolver's
// 5 s): a silent server costs one timeout, not one per shard.
func lookUpShards(ci *v1alpha1.ClusterIngress, lookup Lookup) map[string]DNSAnswer {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]DNSAnswer{}
	for _, sh := range ci.Status.Shards {
		if sh.Domain == "" || len(sh.Targets) == 0 {
			continue
		}
		wg.Go(func() {
			name := doctorProbe + "." + sh.Domain
			addrs, err := lookup(name + ".")
			a := DNSAnswer{Name: name, Addresses: addrs}
			if err != nil {
				a.Error = err.Error()
				var dnsErr *net.DNSError
				a.Unasked = !errors.As(err, &dnsErr) || !dnsErr.IsNotFound
			}
			mu.Lock()
			out[sh.Name] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func printDiagnoses(w io.Writer, ds []Diagnosis) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "No cluster has anything wrong that Shardgate reports.")
		return
	}
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		ready := "not Ready"
		if d.Ready {
			ready = "Ready"
		}
		fmt.Fprintf(w, "%s (%s): %s\n", printable(d.Cluster), printable(orDash(d.Domain)), ready)
		if len(d.Findings) == 0 {
			fmt.Fprintln(w, "  nothing wrong found")
		}
		for j, f := range d.Findings {
			fmt.Fprintf(w, "  %d. [%s] %s\n", j+1, f.Severity, printable(f.Cause))
			if f.Message != "" {
				fmt.Fprintf(w, "     %s\n", printable(f.Message))
			}
			fmt.Fprintf(w, "     next: %s\n", printable(f.Next))
			if f.Runbook != "" {
				fmt.Fprintf(w, "     runbook: docs/runbooks.md#%s\n", strings.ToLower(f.Runbook))
			}
		}
	}
}

// printable quotes what a terminal would act on: messages carry names a cluster's owner chose
// (its nodes'), and a newline or an escape sequence in one must not forge a finding or rewrite
// the operator's screen.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return '?'
		}
		return r
	}, s)
}
