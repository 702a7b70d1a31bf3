# The xdsconform image as a release builds it: GoReleaser (.goreleaser.yaml,
# dockers_v2) has already built the static binaries, one per platform, and
# passes them in the build context as $TARGETPLATFORM/xdsconform. Same base,
# user and entrypoint as docker/Dockerfile, which builds from source.
FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/xdsconform /usr/local/bin/xdsconform
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/xdsconform"]
CMD ["--help"]
