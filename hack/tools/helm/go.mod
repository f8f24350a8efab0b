// Pinned build of helm for tests and code generation.
module github.com/shardgate/shardgate/hack/tools/helm

go 1.26.0

require helm.sh/helm/v3 v3.22.0
