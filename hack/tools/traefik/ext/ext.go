// Package ext holds the extension points Traefik's dynamic configuration embeds. Upstream they are
// empty structs; they carry no configuration in the open-source build.
package ext

// HTTP extends dynamic.HTTPConfiguration.
type HTTP struct{}

// Router extends dynamic.Router.
type Router struct{}
