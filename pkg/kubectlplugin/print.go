package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/pkg/clusterview"
)

// Output formats: human tables by default, json and yaml for scripts.
const (
	OutputHuman = ""
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// write prints v as json or yaml, or calls human.
func write(w io.Writer, format string, v any, human func(io.Writer)) error {
	switch format {
	case OutputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case OutputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case OutputHuman:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		human(tw)
		return tw.Flush()
	}
	return fmt.Errorf("unknown output format %q (json or yaml)", format)
}

func printStatus(w io.Writer, s Status) {
	fmt.Fprintf(w, "Cluster domain:\t%s (every name under it reaches the cluster's routers)\n", s.ClusterDomain)
	https := "no: bring your own certificate (spec.tls with a secretName)"
	if s.HTTPS {
		https = "yes: every name under the shard domains is served with the cluster's certificate"
	}
	fmt.Fprintf(w, "HTTPS:\t%s\n\n", https)
	fmt.Fprintln(w, "SHARD\tROUTER\tINGRESS CLASS\tLOAD\tNAMES\tCNAME TARGET FOR YOUR OWN HOSTS")
	for _, sh := range s.Shards {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t*.%s\t%s\n", sh.Name, orDash(sh.Flavour), orDash(sh.IngressClass), orDash(sh.Load),
			sh.Domain, sh.CNAMETarget)
	}
}

func printExplanation(w io.Writer, kind string, e Explanation) {
	fmt.Fprintf(w, "%s:\t%s/%s\n", kind, e.Namespace, e.Name)
	switch e.State {
	case "Rejected":
		fmt.Fprintf(w, "State:\tRejected\nWhy:\t%s\n", e.Reason)
		return
	case "Pending":
		fmt.Fprintf(w, "State:\tPending\nWhy:\t%s\n", e.Reason)
		return
	}
	fmt.Fprintf(w, "State:\tAllocated\nShard:\t%s\n", e.Shard)
	routers := "serving it (its status says so)"
	if !e.Served {
		routers = "not serving it by its status (not picked up yet, a router of the shard not ready, or refused: see below)"
	}
	fmt.Fprintf(w, "Routers:\t%s\n", routers)
	for _, p := range e.RouterProblems {
		fmt.Fprintf(w, "Problem:\t%s\n", printable(p)) // the routers' and the cluster owner's words
	}
	target := e.CNAMETarget
	if target == "" {
		target = e.ShardDomain
	}
	if target != "" {
		fmt.Fprintf(w, "CNAME target:\t%s (for hosts of your own)\n", target)
	}
	fmt.Fprintln(w, "\nHOST\tDNS ANSWER\tNOTE")
	for _, h := range e.Hosts {
		answer := strings.Join(h.Addresses, ",")
		if !h.Resolves() {
			answer = "does not resolve"
			if h.Error != "" {
				answer += " (" + h.Error + ")"
			}
		}
		note := "published by Shardgate"
		if !h.UnderShardDomain {
			note = "your own host: needs a CNAME to " + target
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", h.Name, answer, note)
	}
}

func printClusters(w io.Writer, p clusterview.Page) {
	fmt.Fprintln(w, "NAMESPACE\tNAME\tDOMAIN\tREADY\tREACHABLE\tDNS\tSHARDS\tTARGETS\tROUTES\tREJECTED\tBY KIND\tCERTIFICATE")
	for _, c := range p.Clusters {
		var shards []string
		for _, s := range c.Shards {
			shards = append(shards, fmt.Sprintf("%s:%d/%d", s.Name, s.Ready, s.Desired))
		}
		dns := c.DNS.Reason
		if len(c.DNSVerifiedBy) > 0 {
			dns += "(verified)"
		}
		cert := "-"
		if c.CertificateExpiry != nil {
			cert = c.CertificateExpiry.UTC().Format("2006-01-02")
		}
		var kinds []string
		for _, k := range c.RouteKinds {
			kinds = append(kinds, fmt.Sprintf("%s:%d/%d", k.Kind, k.Routes, k.Rejected))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", c.Namespace, c.Name, orDash(c.Domain), c.Ready.Reason,
			c.Reachable.Reason, dns, orDash(strings.Join(shards, ",")), orDash(strings.Join(c.Targets, ",")), c.Routes, c.Rejected,
			orDash(strings.Join(kinds, ",")), cert)
	}
	fmt.Fprintf(w, "\n%d cluster(s), %d not ready", p.Total, p.NotReady)
	if p.Pages > 1 {
		fmt.Fprintf(w, "; page %d of %d (--page)", p.Page, p.Pages)
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
