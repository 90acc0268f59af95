# The longhaul image: one static binary on an empty base, run as a non-root
# user. It serves every role of the team stack (docker-compose.yml):
# `longhaul server`, `longhaul worker`, `longhaul ui`, and `longhaul run`.
#
#   docker build -t longhaul/longhaul:latest .
#
# Where no registry answers (no golang image to pull), scripts/offline-images.sh
# builds the same image from a binary built on the host: it replaces the build
# stage by one that copies the binary from its context and keeps the runtime
# stage below as it is.
#
# The worker needs the Docker engine's socket to provision targets; the
# compose file adds the socket's group to it rather than running it as root.

ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary (the SQLite driver is pure Go), which runs on
# scratch. /rootfs/data becomes the data directory, with a tmp inside it.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/longhaul ./cmd/longhaul && \
	mkdir -p /rootfs/data/tmp

# runtime: it needs only /out/longhaul and /rootfs/data from the build stage.
FROM scratch AS runtime
COPY --from=build /out/longhaul /longhaul
# scratch has no /tmp and no home: both live in /data, owned by the user the
# image runs as (65532, "nonroot" by convention), so a named volume on /data
# starts out writable.
COPY --from=build --chown=65532:65532 /rootfs/data /data
# USER: without cgo, os/user cannot look the user up, and the Temporal
# server's telemetry set-up fails without $USER.
ENV HOME=/data USER=longhaul TMPDIR=/data/tmp LONGHAUL_DOCKER_ROUTE=published-port TESTCONTAINERS_RYUK_DISABLED=true
VOLUME /data
WORKDIR /data
USER 65532:65532
EXPOSE 7233 8099
ENTRYPOINT ["/longhaul"]
CMD ["--help"]
