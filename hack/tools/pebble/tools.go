//go:build tools

// Package tools pins Pebble's command for hack/tools/build.sh.
package tools

import _ "github.com/letsencrypt/pebble/v2/cmd/pebble"
