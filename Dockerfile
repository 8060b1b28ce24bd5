# softalloc from source: docker build -t softalloc .
#   docker run --rm softalloc recommend --topology 1/4/1/4
#   docker run --rm -v "$PWD:/work" softalloc recommend -f deployment.yaml --runner replay --campaign journal.jsonl
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/softalloc/softalloc/internal/version.stamped=${VERSION}" \
    -o /out/softalloc ./cmd/softalloc

# A static binary on a base with no shell and a non-root user (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/softalloc /usr/local/bin/softalloc
WORKDIR /work
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/softalloc"]
