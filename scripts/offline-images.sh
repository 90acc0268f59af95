#!/usr/bin/env bash
# offline-images.sh builds the container images longhaul's scenarios use, without
# pulling anything from a registry (for machines and air-gapped CI that have a
# Docker engine but no registry):
#
#   longhaul/postgres:15-offline   PostgreSQL 15 from Debian packages (debootstrap),
#                                  with an entrypoint that initialises the cluster from
#                                  POSTGRES_PASSWORD / POSTGRES_USER / POSTGRES_DB /
#                                  PGDATA like the official postgres image.
#   longhaul/mariadb:offline       MariaDB 10.11 from Debian packages (debootstrap), with
#                                  an entrypoint that initialises the data directory from
#                                  MYSQL_ROOT_PASSWORD / MYSQL_USER / MYSQL_PASSWORD /
#                                  MYSQL_DATABASE (or the MARIADB_ names) like the official
#                                  mysql and mariadb images: database.kind mysql/mariadb.
#                                  (MongoDB has no Debian package: bring your own image.)
#   longhaul/demo-target:latest    examples/demo-target, a static Go binary FROM scratch.
#   longhaul/longhaul:latest       longhaul itself: the Dockerfile's runtime stage on a
#                                  binary built here (the Dockerfile's build stage needs
#                                  a golang image from a registry), with the C libraries
#                                  that cgo build links.
#   longhaul/victoria-metrics:offline
#                                  VictoriaMetrics from Debian's victoria-metrics package
#                                  (debootstrap, like PostgreSQL), for docker-compose.yml.
#
# Usage: scripts/offline-images.sh [--force] [--refresh] [postgres|mariadb|demo-target|longhaul|victoria-metrics]...
#
# With no image named, it builds all five. It is idempotent: an image that exists is
# skipped unless what it was built from changed (the recipe's functions in this script
# for PostgreSQL and VictoriaMetrics, the Go sources for the demo target and longhaul:
# a label records a hash); --force rebuilds the images; --refresh also runs debootstrap
# again instead of reusing the root filesystems it left. The root filesystem and its .deb cache live outside the repository,
# in $LONGHAUL_OFFLINE_CACHE (default /var/cache/longhaul-offline when writable,
# else ${TMPDIR:-/tmp}/longhaul-offline).
#
# Needs: docker, debootstrap (root; installed with apt-get when missing), go. The Debian mirror is read from the apt
# sources on this machine; set DEBIAN_MIRROR to override it.
set -euo pipefail

readonly PG_IMAGE=longhaul/postgres:15-offline
readonly MARIADB_IMAGE=longhaul/mariadb:offline
readonly DEMO_IMAGE=longhaul/demo-target:latest
readonly LONGHAUL_IMAGE=longhaul/longhaul:latest
readonly VM_IMAGE=longhaul/victoria-metrics:offline
readonly SUITE=bookworm

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
force=0
refresh=0
targets=()

usage() {
	echo "usage: $0 [--force] [--refresh] [postgres|mariadb|demo-target|longhaul|victoria-metrics]..." >&2
	exit 2
}

for arg in "$@"; do
	case "$arg" in
	--force) force=1 ;;
	--refresh) force=1 refresh=1 ;;
	postgres | mariadb | demo-target | longhaul | victoria-metrics) targets+=("$arg") ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "offline-images: unknown argument $arg" >&2; usage ;;
	esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(postgres mariadb demo-target longhaul victoria-metrics)

# Log lines go to fd 3 (the original stderr), so they survive the redirection
# of a step's own output into a log file.
exec 3>&2
log() { printf '%s offline-images: %s\n' "$(date +%H:%M:%S)" "$*" >&3; }
die() { log "error: $*"; exit 1; }

# timed NAME CMD... runs CMD and prints how long it took.
timed() {
	local name=$1 start end
	shift
	start=$(date +%s.%N)
	"$@"
	end=$(date +%s.%N)
	log "$name took $(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.1f", e-s}') s"
}

# quiet CMD... runs CMD with its output kept aside, shown only if it fails
# (the legacy builder prints a deprecation banner on every build).
quiet() {
	local out
	out=$(mktemp)
	if ! "$@" >"$out" 2>&1; then
		tail -n 20 "$out" >&3
		rm -f "$out"
		die "$* failed"
	fi
	rm -f "$out"
}

# remove_replaced OLD_ID TAG removes the image TAG pointed to before a rebuild,
# unless it is still TAG or a container uses it.
remove_replaced() {
	[[ -n $1 && $1 != "$(docker image inspect -f '{{.Id}}' "$2" 2>/dev/null)" ]] || return 0
	docker image rm "$1" >/dev/null 2>&1 || true
}

docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); start one or use provider: local"

cache_dir=${LONGHAUL_OFFLINE_CACHE:-}
if [[ -z $cache_dir ]]; then
	if mkdir -p /var/cache/longhaul-offline 2>/dev/null && [[ -w /var/cache/longhaul-offline ]]; then
		cache_dir=/var/cache/longhaul-offline
	else
		cache_dir=${TMPDIR:-/tmp}/longhaul-offline
	fi
fi
case "$cache_dir/" in "$repo_root"/*) die "cache dir $cache_dir is inside the repository; set LONGHAUL_OFFLINE_CACHE elsewhere" ;; esac
mkdir -p "$cache_dir"

# debian_mirror prints the Debian archive URI apt uses on this machine (deb822
# .sources first, then one-line sources.list), skipping the security archive.
debian_mirror() {
	if [[ -n ${DEBIAN_MIRROR:-} ]]; then
		echo "$DEBIAN_MIRROR"
		return
	fi
	local uri
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk 'tolower($1)=="uris:" {for (i = 2; i <= NF; i++) print $i}' |
		grep -v -- '-security' | head -n1 || true)
	if [[ -z $uri ]]; then
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1=="deb" {for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) {print $i; break}}' |
			grep -v -- '-security' | head -n1 || true)
	fi
	[[ -n $uri ]] || die "no Debian mirror found in /etc/apt/sources.list*; set DEBIAN_MIRROR"
	echo "$uri"
}

# The entrypoint mirrors what longhaul relies on from the official image's
# docker-entrypoint.sh: env-driven first-start initialisation, scram-sha-256 for
# all hosts, listen on '*', a temporary socket-only server for the init steps
# (so "database system is ready to accept connections" is logged twice on first
# start and once on later starts, exactly as testcontainers' postgres module
# expects), then exec postgres as the postgres user so signals reach it.
write_entrypoint() {
	cat >"$1" <<'ENTRYPOINT'
#!/bin/bash
set -Eeuo pipefail

if [[ ${1:-} == -* ]]; then
	set -- postgres "$@"
fi

as_postgres() {
	setpriv --reuid=postgres --regid=postgres --init-groups "$@"
}

if [[ ${1:-} == postgres && $(id -u) == 0 ]]; then
	: "${POSTGRES_USER:=postgres}"
	: "${POSTGRES_DB:=$POSTGRES_USER}"
	: "${PGDATA:=/var/lib/postgresql/data}"
	export PGDATA
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	chmod 2775 /var/run/postgresql

	if [[ ! -s $PGDATA/PG_VERSION ]]; then
		auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
		if [[ -z ${POSTGRES_PASSWORD:-} && $auth != trust ]]; then
			echo 'error: database is uninitialized and superuser password is not specified.' >&2
			echo '       Set POSTGRES_PASSWORD to a non-empty value (or POSTGRES_HOST_AUTH_METHOD=trust).' >&2
			exit 1
		fi
		pwfile=$(mktemp)
		printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
		chown postgres "$pwfile"
		as_postgres initdb --username="$POSTGRES_USER" --pwfile="$pwfile" \
			--auth-local=trust --auth-host="$auth" --encoding=UTF8 --locale=C.UTF-8 \
			${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
		rm -f "$pwfile"
		printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
		cat >>"$PGDATA/postgresql.conf" <<-CONF
		listen_addresses = '*'
		# The LLVM JIT libraries are removed from this image to keep it small.
		jit = off
		CONF

		# Temporary server on the socket only, for the init steps.
		as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
		psql=(psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname postgres)
		if [[ $POSTGRES_DB != postgres ]]; then
			exists=$(as_postgres "${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '${POSTGRES_DB//\'/\'\'}'")
			if [[ $exists != 1 ]]; then
				as_postgres "${psql[@]}" -c "CREATE DATABASE \"${POSTGRES_DB//\"/\"\"}\""
			fi
		fi
		for f in /docker-entrypoint-initdb.d/*; do
			[[ -e $f ]] || continue
			case "$f" in
			*.sh) echo "running $f"; as_postgres bash "$f" ;;
			*.sql) echo "running $f"; as_postgres "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
			*) echo "ignoring $f" ;;
			esac
		done
		as_postgres pg_ctl -D "$PGDATA" -m fast -w stop
		echo 'PostgreSQL init process complete; ready for start up.'
	fi
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi

exec "$@"
ENTRYPOINT
	chmod 755 "$1"
}

# ensure_debootstrap installs debootstrap with apt when it is missing (we are
# root here), as .ci/run does; without apt it says what to install.
ensure_debootstrap() {
	command -v debootstrap >/dev/null && return
	command -v apt-get >/dev/null ||
		die "debootstrap is not installed and there is no apt-get here: install debootstrap with this system's package manager"
	log "debootstrap is not installed; installing it with apt-get"
	{
		DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
	} >"$cache_dir/apt.log" 2>&1 ||
		{ tail -n 20 "$cache_dir/apt.log" >&3; die "apt-get install debootstrap failed (log: $cache_dir/apt.log)"; }
	command -v debootstrap >/dev/null || die "apt-get installed debootstrap but it is not on PATH"
	log "installed debootstrap"
}

build_postgres() {
	local rootfs=$cache_dir/postgres-rootfs
	debootstrap_rootfs postgres postgresql-15 "$rootfs"

	log "trimming the root filesystem"
	# The package's own cluster (created by postgresql-common's postinst) is
	# replaced by the one the entrypoint initialises in PGDATA.
	rm -rf "$rootfs"/var/lib/postgresql/15 "$rootfs"/etc/postgresql/15
	rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
		"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
		"$rootfs"/usr/share/locale/* "$rootfs"/usr/share/postgresql/15/man
	# JIT is switched off in the generated postgresql.conf; without llvmjit.so
	# PostgreSQL disables JIT silently, and LLVM is a third of the image.
	rm -f "$rootfs"/usr/lib/postgresql/15/lib/llvmjit*.so "$rootfs"/usr/lib/x86_64-linux-gnu/libLLVM-*.so*
	rm -rf "$rootfs"/usr/lib/postgresql/15/lib/bitcode
	mkdir -p "$rootfs"/docker-entrypoint-initdb.d "$rootfs"/usr/local/bin
	write_entrypoint "$rootfs/usr/local/bin/docker-entrypoint.sh"
	log "root filesystem is $(du -sh --exclude=proc --exclude=sys "$rootfs" | cut -f1)"

	# docker import sets all of the image configuration but STOPSIGNAL (SIGINT:
	# PostgreSQL's fast shutdown; SIGTERM would wait for clients to disconnect),
	# which a one-step local Dockerfile adds (no context, nothing pulled; each
	# legacy-builder step costs ~10 s here, so there is only one). The base tag
	# is removed afterwards.
	local base=${PG_IMAGE}-rootfs old
	old=$(docker image inspect -f '{{.Id}}' "$PG_IMAGE" 2>/dev/null || true)
	timed "docker import" bash -c '
		tar --numeric-owner --exclude=./.longhaul-complete --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
			-C "$1" -c . | docker import \
			--change "ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			--change "ENV PGDATA=/var/lib/postgresql/data" \
			--change "ENV LANG=C.UTF-8" \
			--change "LABEL org.opencontainers.image.title=postgres-15-offline dev.longhaul.offline=true dev.longhaul.source-hash=$4" \
			--change "ENTRYPOINT [\"docker-entrypoint.sh\"]" \
			--change "CMD [\"postgres\"]" \
			--change "EXPOSE 5432" \
			--message "longhaul offline PostgreSQL 15 (Debian $3)" - "$2" >/dev/null' \
		_ "$rootfs" "$base" "$SUITE" "$(recipe_hash build_postgres write_entrypoint)"
	printf 'FROM %s\nSTOPSIGNAL SIGINT\n' "$base" >"$cache_dir/Dockerfile.postgres"
	timed "docker build $PG_IMAGE" quiet docker build -q -t "$PG_IMAGE" - <"$cache_dir/Dockerfile.postgres"
	docker image rm "$base" >/dev/null
	remove_replaced "$old" "$PG_IMAGE"
	log "built $PG_IMAGE ($(docker image inspect -f '{{.Size}}' "$PG_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# write_mariadb_entrypoint mirrors what longhaul relies on from the official
# mysql/mariadb images' entrypoints: on a first start (an empty data
# directory) it initialises it, runs a temporary server without networking to
# create the root password, database and user, then execs the real server as
# the mysql user with the arguments given (so only the real server logs
# "port: 3306", which the wait strategy looks for).
write_mariadb_entrypoint() {
	cat >"$1" <<'ENTRYPOINT'
#!/bin/bash
set -Eeuo pipefail

if [[ ${1:-} == -* ]]; then
	set -- mariadbd "$@"
fi

if [[ ${1:-} == mariadbd || ${1:-} == mysqld ]] && [[ $(id -u) == 0 ]]; then
	: "${MYSQL_ROOT_PASSWORD:=${MARIADB_ROOT_PASSWORD:-}}"
	: "${MYSQL_USER:=${MARIADB_USER:-}}"
	: "${MYSQL_PASSWORD:=${MARIADB_PASSWORD:-}}"
	: "${MYSQL_DATABASE:=${MARIADB_DATABASE:-}}"
	: "${MYSQL_ALLOW_EMPTY_PASSWORD:=${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-}}"
	datadir=/var/lib/mysql
	mkdir -p "$datadir" /run/mysqld
	chown mysql:mysql "$datadir" /run/mysqld
	if [[ ! -d $datadir/mysql ]]; then
		if [[ -z $MYSQL_ROOT_PASSWORD && -z $MYSQL_ALLOW_EMPTY_PASSWORD ]]; then
			echo 'error: database is uninitialized and the root password is not specified.' >&2
			echo '       Set MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD=yes).' >&2
			exit 1
		fi
		echo 'initialising the data directory'
		mariadb-install-db --no-defaults --user=mysql --datadir="$datadir" 			--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >/dev/null
		setpriv --reuid=mysql --regid=mysql --init-groups mariadbd --no-defaults --datadir="$datadir" 			--skip-networking --socket=/run/mysqld/init.sock --skip-log-bin &
		pid=$!
		for _ in $(seq 1 300); do
			mariadb --socket=/run/mysqld/init.sock -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
			sleep 0.1
		done
		sq() { printf "'%s'" "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")"; }
		bq() { printf '`%s`' "$(printf '%s' "$1" | sed -e 's/`/``/g')"; }
		{
			echo "CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY $(sq "$MYSQL_ROOT_PASSWORD");"
			echo "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;"
			echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(sq "$MYSQL_ROOT_PASSWORD");"
			if [[ -n $MYSQL_DATABASE ]]; then
				echo "CREATE DATABASE IF NOT EXISTS $(bq "$MYSQL_DATABASE");"
			fi
			if [[ -n $MYSQL_USER && $MYSQL_USER != root ]]; then
				echo "CREATE USER IF NOT EXISTS $(sq "$MYSQL_USER")@'%' IDENTIFIED BY $(sq "$MYSQL_PASSWORD");"
				if [[ -n $MYSQL_DATABASE ]]; then
					echo "GRANT ALL PRIVILEGES ON $(bq "$MYSQL_DATABASE").* TO $(sq "$MYSQL_USER")@'%';"
				fi
			fi
			echo "FLUSH PRIVILEGES;"
		} | mariadb --socket=/run/mysqld/init.sock -uroot
		kill "$pid"
		wait "$pid" || true
		echo 'MariaDB init process complete; ready for start up.'
	fi
	shift
	exec setpriv --reuid=mysql --regid=mysql --init-groups mariadbd --no-defaults --datadir="$datadir" 		--bind-address=0.0.0.0 --port=3306 --socket=/run/mysqld/mysqld.sock --skip-name-resolve "$@"
fi

exec "$@"
ENTRYPOINT
	chmod 755 "$1"
}

build_mariadb() {
	local rootfs=$cache_dir/mariadb-rootfs old
	debootstrap_rootfs mariadb mariadb-server "$rootfs"
	log "trimming the root filesystem"
	# The package's own data directory is replaced by the one the entrypoint
	# initialises on the container's volume.
	rm -rf "$rootfs"/var/lib/mysql/*
	rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
		"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
	mkdir -p "$rootfs"/usr/local/bin
	write_mariadb_entrypoint "$rootfs/usr/local/bin/docker-entrypoint.sh"
	old=$(docker image inspect -f '{{.Id}}' "$MARIADB_IMAGE" 2>/dev/null || true)
	timed "docker import $MARIADB_IMAGE" bash -c '
		tar --numeric-owner --exclude=./.longhaul-complete --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
			-C "$1" -c . | docker import \
			--change "ENV LANG=C.UTF-8" \
			--change "LABEL org.opencontainers.image.title=mariadb-offline dev.longhaul.offline=true dev.longhaul.source-hash=$4" \
			--change "ENTRYPOINT [\"docker-entrypoint.sh\"]" \
			--change "CMD [\"mariadbd\"]" \
			--change "EXPOSE 3306" \
			--message "longhaul offline MariaDB (Debian $3)" - "$2" >/dev/null' \
		_ "$rootfs" "$MARIADB_IMAGE" "$SUITE" "$(recipe_hash build_mariadb write_mariadb_entrypoint)"
	remove_replaced "$old" "$MARIADB_IMAGE"
	log "built $MARIADB_IMAGE ($(docker image inspect -f '{{.Size}}' "$MARIADB_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# recipe_hash FUNCTION... identifies an image's recipe: the functions that build
# it (and the suite), so an edit elsewhere in this script rebuilds nothing.
recipe_hash() { { echo "$SUITE"; declare -f "$@" debootstrap_rootfs; } | sha256sum | cut -c1-16; }

# debootstrap_rootfs NAME PACKAGE DIR makes (or reuses) a minbase root
# filesystem with PACKAGE in DIR.
debootstrap_rootfs() {
	local name=$1 pkg=$2 rootfs=$3 debs=$cache_dir/debs mirror
	mirror=$(debian_mirror)
	[[ $(id -u) == 0 ]] || die "debootstrap needs root (run this script as root)"
	ensure_debootstrap
	if [[ $refresh == 1 || ! -f $rootfs/.longhaul-complete ]]; then
		rm -rf "$rootfs"
		mkdir -p "$rootfs" "$debs"
		log "debootstrap $SUITE with $pkg from $mirror into $rootfs"
		timed debootstrap debootstrap --variant=minbase --include="$pkg" \
			--cache-dir="$debs" "$SUITE" "$rootfs" "$mirror" >"$cache_dir/debootstrap-$name.log" 2>&1 ||
			{ tail -n 20 "$cache_dir/debootstrap-$name.log" >&3; die "debootstrap failed (log: $cache_dir/debootstrap-$name.log)"; }
		touch "$rootfs/.longhaul-complete"
	else
		log "reusing root filesystem $rootfs (--refresh runs debootstrap again)"
	fi
}

build_victoria_metrics() {
	local rootfs=$cache_dir/victoria-metrics-rootfs old
	debootstrap_rootfs victoria-metrics victoria-metrics "$rootfs"
	log "trimming the root filesystem"
	rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
		"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
	# The data directory, owned by the user the image runs as (nobody), so
	# a named volume on it starts out writable.
	mkdir -p "$rootfs"/storage
	chown 65534:65534 "$rootfs"/storage
	old=$(docker image inspect -f '{{.Id}}' "$VM_IMAGE" 2>/dev/null || true)
	# The entrypoint is the binary, as in VictoriaMetrics' own image, so the
	# compose file's flags work with either.
	timed "docker import $VM_IMAGE" bash -c '
		tar --numeric-owner --exclude=./.longhaul-complete --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
			-C "$1" -c . | docker import \
			--change "LABEL org.opencontainers.image.title=victoria-metrics-offline dev.longhaul.offline=true dev.longhaul.source-hash=$4" \
			--change "ENTRYPOINT [\"/usr/bin/victoria-metrics\"]" \
			--change "CMD [\"-storageDataPath=/storage\"]" \
			--change "USER 65534:65534" \
			--change "WORKDIR /storage" \
			--change "EXPOSE 8428" \
			--message "longhaul offline VictoriaMetrics (Debian $3)" - "$2" >/dev/null' \
		_ "$rootfs" "$VM_IMAGE" "$SUITE" "$(recipe_hash build_victoria_metrics)"
	remove_replaced "$old" "$VM_IMAGE"
	log "built $VM_IMAGE ($(docker image inspect -f '{{.Size}}' "$VM_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# longhaul_source_hash identifies what goes into the longhaul binary and image.
longhaul_source_hash() {
	(cd "$repo_root" && cat go.mod go.sum Dockerfile $(git ls-files -co --exclude-standard -- '*.go' ':!:*_test.go' | sort)) |
		sha256sum | cut -c1-16
}

build_longhaul() {
	local hash ctx old
	hash=$(longhaul_source_hash)
	old=$(docker image inspect -f '{{.Id}}' "$LONGHAUL_IMAGE" 2>/dev/null || true)
	if [[ $force == 0 ]] && up_to_date "$LONGHAUL_IMAGE" "$hash"; then
		log "$LONGHAUL_IMAGE exists and is up to date; skipping (--force rebuilds)"
		return
	fi
	ctx=$(mktemp -d "${TMPDIR:-/tmp}/longhaul-image.XXXXXX")
	trap 'rm -rf "$ctx"' RETURN
	mkdir -p "$ctx/data/tmp"
	# Built as the tests build (no -trimpath, cgo as the host has it), unlike
	# the Dockerfile's static CGO_ENABLED=0 build: either would miss the build
	# cache that this machine's builds and tests share, and compile the
	# Temporal server a second time (minutes; CI builds these images first).
	# A cgo binary links the host's C library dynamically, so the image gets
	# the host's copies of the libraries it names (ldd) beside it.
	timed "go build longhaul" bash -c 'cd "$1" && go build -ldflags="-s -w" -o "$2/longhaul" ./cmd/longhaul' _ "$repo_root" "$ctx"
	mkdir -p "$ctx/libs"
	local lib
	for lib in $(ldd "$ctx/longhaul" 2>/dev/null | grep -o '/[^ ]*' || true); do
		cp --parents -L "$lib" "$ctx/libs/"
	done
	# cgo's os/user asks the C library, which reads /etc/passwd: the user the
	# image runs as must be in it (the Temporal server looks itself up).
	if [[ -n $(ls -A "$ctx/libs") ]]; then
		mkdir -p "$ctx/libs/etc"
		printf 'root:x:0:0:root:/root:/sbin/nologin\nlonghaul:x:65532:65532:longhaul:/data:/sbin/nologin\n' >"$ctx/libs/etc/passwd"
		printf 'root:x:0:\nlonghaul:x:65532:\n' >"$ctx/libs/etc/group"
	fi
	# The Dockerfile's runtime stage, unchanged, after a build stage that
	# holds what the real one produces; then the libraries, if any.
	{
		printf 'FROM scratch AS build\nCOPY longhaul /out/longhaul\nCOPY data /rootfs/data\n\n'
		sed -n '/^FROM scratch AS runtime/,$p' "$repo_root/Dockerfile"
		printf '\nCOPY libs/ /\n'
	} >"$ctx/Dockerfile"
	grep -q '^FROM scratch AS runtime' "$ctx/Dockerfile" || die "Dockerfile has no 'FROM scratch AS runtime' stage"
	timed "docker build $LONGHAUL_IMAGE" quiet docker build -q --label "dev.longhaul.source-hash=$hash" \
		-t "$LONGHAUL_IMAGE" "$ctx"
	remove_replaced "$old" "$LONGHAUL_IMAGE"
	log "built $LONGHAUL_IMAGE ($(docker image inspect -f '{{.Size}}' "$LONGHAUL_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# up_to_date IMAGE HASH tells whether IMAGE exists with that source hash label.
up_to_date() {
	[[ $(docker image inspect -f '{{index .Config.Labels "dev.longhaul.source-hash"}}' "$1" 2>/dev/null) == "$2" ]]
}

# demo_source_hash identifies the demo target's sources, so a stale image is rebuilt.
demo_source_hash() {
	(cd "$repo_root" && cat go.mod go.sum $(ls examples/demo-target/*.go | grep -v '_test\.go$') examples/demo-target/Dockerfile) |
		sha256sum | cut -c1-16
}

build_demo_target() {
	local hash ctx old
	hash=$(demo_source_hash)
	old=$(docker image inspect -f '{{.Id}}' "$DEMO_IMAGE" 2>/dev/null || true)
	if [[ $force == 0 ]] && up_to_date "$DEMO_IMAGE" "$hash"; then
		log "$DEMO_IMAGE exists and is up to date; skipping (--force rebuilds)"
		return
	fi
	ctx=$(mktemp -d "${TMPDIR:-/tmp}/longhaul-demo-target.XXXXXX")
	trap 'rm -rf "$ctx"' RETURN
	# See the Dockerfile for why /tmp travels as a tar.
	mkdir -m 1777 "$ctx/tmp"
	tar -C "$ctx" --numeric-owner --owner=0 --group=0 -cf "$ctx/tmp.tar" tmp
	timed "go build demo-target" bash -c 'cd "$1" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$2/demo-target" ./examples/demo-target' _ "$repo_root" "$ctx"
	timed "docker build $DEMO_IMAGE" quiet docker build -q --label "dev.longhaul.source-hash=$hash" \
		-f "$repo_root/examples/demo-target/Dockerfile" -t "$DEMO_IMAGE" "$ctx"
	remove_replaced "$old" "$DEMO_IMAGE"
	log "built $DEMO_IMAGE ($(docker image inspect -f '{{.Size}}' "$DEMO_IMAGE" | awk '{printf "%.1f MB", $1/1e6}'))"
}

total_start=$(date +%s)
for t in "${targets[@]}"; do
	case "$t" in
	postgres)
		if [[ $force == 0 ]] && up_to_date "$PG_IMAGE" "$(recipe_hash build_postgres write_entrypoint)"; then
			log "$PG_IMAGE exists and is up to date; skipping (--force rebuilds)"
		else
			build_postgres
		fi
		;;
	mariadb)
		if [[ $force == 0 ]] && up_to_date "$MARIADB_IMAGE" "$(recipe_hash build_mariadb write_mariadb_entrypoint)"; then
			log "$MARIADB_IMAGE exists and is up to date; skipping (--force rebuilds)"
		else
			build_mariadb
		fi
		;;
	victoria-metrics)
		if [[ $force == 0 ]] && up_to_date "$VM_IMAGE" "$(recipe_hash build_victoria_metrics)"; then
			log "$VM_IMAGE exists and is up to date; skipping (--force rebuilds)"
		else
			build_victoria_metrics
		fi
		;;
	demo-target) build_demo_target ;;
	longhaul) build_longhaul ;;
	esac
done
log "done in $(($(date +%s) - total_start)) s"
