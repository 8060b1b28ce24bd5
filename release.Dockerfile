# The release image: goreleaser puts the binary it built beside this file.
FROM gcr.io/distroless/static-debian12:nonroot
COPY softalloc /usr/local/bin/softalloc
WORKDIR /work
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/softalloc"]
