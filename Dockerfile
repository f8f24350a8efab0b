# Static, non-root image of the seed controller. Build the binaries with `make release` first;
# the image only copies them (no compiler in the image, no shell, nothing to patch).
FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETARCH=amd64
COPY dist/seed-controller-linux-${TARGETARCH} /seed-controller
USER 65532:65532
ENTRYPOINT ["/seed-controller"]
