// Pinned build of kwok for tests and code generation.
module github.com/shardgate/shardgate/hack/tools/kwok

go 1.26.0

require sigs.k8s.io/kwok v0.8.0
