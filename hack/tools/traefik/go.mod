// Pinned build of Traefik v3 for the real ingress data path in tests and the demo.
// `go install` refuses Traefik's replace directives, so this wrapper repeats them:
//   - github.com/traefik/traefik/dynamic/ext is a nested module that is not in Traefik's module
//     zip; ./ext is a stand-in with the (empty) extension types Traefik embeds.
//   - the go-http-auth fork commit Traefik pins is refused by the module proxy; the nearest
//     served commit of the same fork is used.
module github.com/shardgate/shardgate/hack/tools/traefik

go 1.26.0

require (
	github.com/traefik/traefik/dynamic/ext v0.0.0-00010101000000-000000000000
	github.com/traefik/traefik/v3 v3.7.12
)

replace github.com/traefik/traefik/dynamic/ext => ./ext

replace (
	github.com/abbot/go-http-auth => github.com/containous/go-http-auth v0.4.1-0.20200324110947-a37a7636d23e
	github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59
)

exclude github.com/tencentcloud/tencentcloud-sdk-go v3.0.83+incompatible
