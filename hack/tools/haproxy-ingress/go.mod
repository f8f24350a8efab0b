// HAProxy's Kubernetes ingress controller, pinned: the router of the HAProxy flavour. v1.11.12 is
// the one version of it the module proxy serves here (v1.11.4, v3.1.6+incompatible and the
// version list are refused), and `go install …@v1.11.12` needs the list: hence this module.
module github.com/shardgate/shardgate/hack/tools/haproxy-ingress

go 1.26.0

require github.com/haproxytech/kubernetes-ingress v1.11.12
