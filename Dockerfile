# syntax=docker/dockerfile:1
#
# Tributary's image: a static binary on distroless/static, run as the
# distroless "nonroot" user (65532), the same uid the Deployment in
# deploy/base asks for. Build with
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t tributary .
#
# The build stage runs on the builder's own platform and cross-compiles for
# TARGETOS/TARGETARCH, so a multi-platform build (buildx --platform
# linux/amd64,linux/arm64) never emulates the compiler.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, in their own layer: source edits do not download them again.
COPY go.mod go.sum ./
COPY client/go.mod client/go.sum client/
COPY gen/go/go.mod gen/go/go.sum gen/go/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH VERSION
# CGO_ENABLED=0: no libc, so the binary runs on an image without one.
# -trimpath keeps build paths out of the binary; version is what
# `tributary version` prints (the .git directory is not in the context).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/tributary ./cmd/tributary

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tributary /usr/local/bin/tributary
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532
EXPOSE 8081 18000 9090
ENTRYPOINT ["/usr/local/bin/tributary"]
CMD ["serve"]
