# isvc in a container: for CI without a Rust toolchain, for the pre-commit
# hooks (isvc-render-docker, isvc-check-docker), and as the sidecar image of
# the Argo CD config-management plugin (examples/argocd-plugin).
#
#   docker build -t isvc .
#   docker run --rm -v "$PWD:/src" -u "$(id -u):$(id -g)" isvc render services --out rendered
#
# The runtime image keeps a shell (/bin/sh): the Argo CD plugin runs
# `sh -c`, and so do the pre-commit hooks.

FROM rust:1-bookworm AS build
WORKDIR /build
COPY . .
RUN cargo build --locked --profile dist \
 && install -D -m 0755 target/dist/isvc /out/isvc

FROM debian:bookworm-slim
COPY --from=build /out/isvc /usr/local/bin/isvc
# Argo CD runs config-management plugin sidecars as user 999; isvc needs no
# other user, no network and no writable path but its --out directory.
USER 999:999
WORKDIR /src
ENTRYPOINT ["isvc"]
CMD ["--help"]
