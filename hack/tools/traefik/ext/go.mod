// Stand-in for Traefik's nested module github.com/traefik/traefik/dynamic/ext, which is not
// published in Traefik's module zip. Traefik only embeds the two empty extension types below.
module github.com/traefik/traefik/dynamic/ext

go 1.26.0
