# syntax=docker/dockerfile:1
# kubectl-aiml with a pinned kustomize and git: for CI steps (Cloud Build, GitHub Actions) and
# Argo CD config-management plugin sidecars. Runs as a non-root user (65532); git trusts any
# repository owner, because CI mounts the checkout with the runner's uid.
#
#   docker build -t kubectl-aiml .                     # builds the binary from this checkout
#   docker run --rm -v "$PWD:/repo" kubectl-aiml render --check
#
# The release workflow builds it with BINARY_SOURCE=prebuilt, from the binaries in its release
# archives (dist/<arch>/kubectl-aiml), so the image runs the published bytes.
#
# Why Debian and not a distroless base: git is a dynamically linked program with helpers and a
# dozen libraries (curl, TLS, pcre2, expat…); Debian's slim image carries them and its security
# updates, with a shell that CI runners need to start steps in a container. kubectl-aiml and
# kustomize themselves are static and need nothing from it.

ARG RUST_VERSION=1.95
ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm
# The kustomize the tests pin (scripts/install-test-deps); tests/release.rs keeps the two equal.
ARG KUSTOMIZE_VERSION=v5.5.0
# `source` builds kubectl-aiml in this image build; `prebuilt` copies dist/<arch>/kubectl-aiml.
ARG BINARY_SOURCE=source

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS kustomize
ARG KUSTOMIZE_VERSION
ARG TARGETOS
ARG TARGETARCH
# Static (no cgo), for the image's architecture; `go install` puts a cross build in a subfolder.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go install -trimpath \
        -ldflags "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=${KUSTOMIZE_VERSION}" \
        "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" \
    && install -D "$(find "$(go env GOPATH)/bin" -type f -name kustomize)" /out/kustomize

# Alpine's Rust targets musl: the binary is static, as in the release archives.
FROM rust:${RUST_VERSION}-alpine AS source
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --features vendored-libgit2 \
    && install -D target/release/kubectl-aiml /out/kubectl-aiml

FROM scratch AS prebuilt
ARG TARGETARCH
COPY dist/${TARGETARCH}/kubectl-aiml /out/kubectl-aiml

FROM ${BINARY_SOURCE} AS binary

FROM debian:${DEBIAN_RELEASE}-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system safe.directory '*'
COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize
COPY --from=binary /out/kubectl-aiml /usr/local/bin/kubectl-aiml
# kubectl finds plugins by name: `kubectl aiml` works where the image also has kubectl.
USER 65532:65532
ENV HOME=/tmp
WORKDIR /repo
ENTRYPOINT ["kubectl-aiml"]
