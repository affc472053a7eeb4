# The guard image: the sanctum-guard binary, the four shared libraries it links (glibc, libm,
# libgcc_s, the loader: ~3 MB from BASE_IMAGE) and the directories it writes. Nothing else: no
# shell, no package manager, no other program, so a compromised guard has no tools to use.
#
#   docker compose -f compose/docker-compose.yml build          # compiles in RUST_IMAGE
#
# Build arguments:
#   BASE_IMAGE  Debian image that lays out the directories (tests: a locally imported base)
#   RUST_IMAGE  toolchain image for GUARD_BIN=build (Rust >= 1.85)
#   GUARD_BIN   build   = compile the binary from this checkout inside RUST_IMAGE (default)
#               context = take the binary `cargo build --release` left in target/release
#                         (glibc 2.36, Debian bookworm's; `strip --strip-all` it first, as
#                         the build stage does, to keep the image under 20 MiB)
ARG BASE_IMAGE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1-bookworm
ARG GUARD_BIN=build

FROM ${RUST_IMAGE} AS bin-build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin sanctum-guard \
 && mkdir -p /out && strip --strip-all -o /out/sanctum-guard target/release/sanctum-guard

FROM ${BASE_IMAGE} AS bin-context
COPY target/release/sanctum-guard /out/sanctum-guard

FROM bin-${GUARD_BIN} AS bin

# Directories owned by the guard's uid (10001), which is no user of the agent's container.
FROM ${BASE_IMAGE} AS layout
RUN mkdir -p /rootfs/lib/x86_64-linux-gnu /rootfs/lib64 \
 && cp -L /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libm.so.6 \
      /lib/x86_64-linux-gnu/libgcc_s.so.1 /rootfs/lib/x86_64-linux-gnu/ \
 && cp -L /lib64/ld-linux-x86-64.so.2 /rootfs/lib64/ \
 && mkdir -p /rootfs/var/lib/sanctum /rootfs/run/sanctum /rootfs/tmp /rootfs/workspace /rootfs/etc/sanctum \
 && chown 10001:10001 /rootfs/var/lib/sanctum \
 && chown 10001:10002 /rootfs/run/sanctum && chmod 2750 /rootfs/run/sanctum \
 && chmod 0700 /rootfs/var/lib/sanctum && chmod 1777 /rootfs/tmp \
 && echo 'sanctum:x:10001:10001:sanctum-guard:/var/lib/sanctum:/nonexistent' > /rootfs/etc/passwd \
 && printf 'sanctum:x:10001:\nsanctum-socket:x:10002:\n' > /rootfs/etc/group

FROM scratch
COPY --from=layout /rootfs/ /
COPY --from=bin /out/sanctum-guard /usr/local/bin/sanctum-guard
USER 10001:10001
ENV HOME=/var/lib/sanctum
ENTRYPOINT ["/usr/local/bin/sanctum-guard"]
CMD ["serve", "--state-dir", "/var/lib/sanctum"]
