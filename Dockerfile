# syntax=docker/dockerfile:1
# The service's image: the projector, the query API and the single-machine
# service, built in a full Rust image and copied into a small Debian one that
# runs as an unprivileged user. docker-compose.yml runs it twice over
# (projector, query API); the entrypoint picks the program.
#
# Checked in CI by hadolint (tests/tests/deployment_files.rs); no image is
# built there, since no Docker engine runs on the CI machines.

FROM rust:1.95-slim-bookworm AS build
# librdkafka is compiled from source (rdkafka's bundled copy; Debian's is too
# old for some brokers): it needs a C toolchain, make, perl and zlib.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential perl pkg-config zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The registry and target caches survive between builds of the same host.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin projector --bin query-api --bin rights-service \
    && install -m 0755 target/release/projector target/release/query-api target/release/rights-service /usr/local/bin/

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/lcc --create-home lcc \
    && mkdir -p /var/lib/lcc/data /var/lib/lcc/snapshots /var/lib/lcc/keys \
    && chown -R lcc:lcc /var/lib/lcc
COPY --from=build /usr/local/bin/projector /usr/local/bin/query-api /usr/local/bin/rights-service /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/lcc
ENV LCC_DATA_DIR=/var/lib/lcc/data
# Public API, API admin listener, projector admin listener.
EXPOSE 8080 8081 8091
ENTRYPOINT ["query-api"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:8081"]
