package clusteraccess

import (
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

// TestMain stops every component the tests started (API servers, etcd), also on an interrupt.
func TestMain(m *testing.M) { framework.Main(m) }
