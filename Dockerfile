# syntax=docker/dockerfile:1.27@sha256:4edf897a3ffa55b89f906fc8cc78afdb3f1834cc9c7083565e611a8a7d5fe99e
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

# Base images (and the BuildKit frontend of the syntax line above, which a
# build pulls too) are pinned by digest, with the tag beside it for the reader:
# the tag says which image it is, the digest decides which bytes are pulled,
# so a rebuild next month gets the same compiler and the same runtime files.
# A tag given with a digest is not resolved at all, which is why there is no
# ARG for the Go version: changing the tag alone would change nothing. A bump
# (by hand, Renovate or Dependabot) changes tag and digest together, in one
# reviewed commit. The digests are the multi-platform index digests of
# those tags as published (golang and docker/dockerfile on Docker Hub,
# distroless on gcr.io), read from public Dockerfiles that pin them; the
# images could not be pulled where this was written. test/deploy checks that every FROM has a digest
# and that the golang tag is the Go of go.mod's go line.
#
# The golang tag names the patch release: the official image sets
# GOTOOLCHAIN=local, so it must be at least go.mod's go version.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
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

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/tributary /usr/local/bin/tributary
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532
EXPOSE 8081 18000 9090
ENTRYPOINT ["/usr/local/bin/tributary"]
CMD ["serve"]
