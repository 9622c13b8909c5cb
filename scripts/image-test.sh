#!/usr/bin/env bash
# The container image end to end with Debian's podman, from a base built here (no registry image):
#   1. base `localhost/fleet-node-base:20-bookworm`: debootstrap bookworm (minbase) plus this
#      machine's Node 20 and npm, and a user `node` (uid 1000), as in the official node image, and
#      this machine's CA certificates (its way to the npm registry may present its own CA);
#   2. `podman build` of ../Dockerfile on that base (NODE_IMAGE build argument);
#   3. runs on the host network against a nats-server of its own (a free port, anonymous):
#      - the tool runner with compose's security options: the sandbox starts (`sandbox_ready`), and a
#        `bash` call made through NATS runs inside it (a new PID namespace: its shell is PID 1's child);
#      - the tool runner with the engine's defaults: the sandbox is refused with a reason that names
#        the options to set (`sandbox_unavailable`);
#      - the gateway: `/healthz` answers.
# Needs root, podman, runc, debootstrap and nats-server (apt-get install -y podman runc debootstrap
# nats-server).
# Not part of `npm test`: it takes minutes and downloads Debian and npm packages.
# FLEET_IMAGE_KEEP=1 keeps the images afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=localhost/fleet-node-base:20-bookworm
image=localhost/fleet:image-test
work=$(mktemp -d /tmp/fleet-image-test.XXXXXX)
nats_pid=""
containers=()
cleanup() {
  for c in "${containers[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  [ -n "$nats_pid" ] && kill "$nats_pid" 2>/dev/null || true
  rm -rf "$work"
  if [ "${FLEET_IMAGE_KEEP:-}" != "1" ]; then podman rmi -f "$image" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
for bin in podman runc debootstrap nats-server; do
  command -v "$bin" >/dev/null || { echo "image-test: $bin is missing (apt-get install -y podman runc debootstrap nats-server)" >&2; exit 2; }
done
# How containers start on a machine like this one (a VM with cgroup v1 plus a v2 hierarchy holding a
# controller, and root without CAP_SYS_RESOURCE): podman's default runtime crun refuses "cgroups in
# hybrid mode", and the default rlimits (nofile 1048576) are above what root may set. runc and the
# machine's own hard limits work.
oci=(--runtime runc --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=8192:8192)
pass=0
fail=0
check() { # name, command...
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}

# 1. The base image.
if ! podman image exists "$base"; then
  echo "== building $base (debootstrap bookworm + Node $(node --version))"
  rootfs=$work/rootfs
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  node_bin=$(readlink -f "$(command -v node)")
  npm_dir=$(dirname "$(readlink -f "$(command -v npm)")")/..
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules"
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  cp -a "$(readlink -f "$npm_dir")" "$rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  cp -a /usr/local/share/ca-certificates/. "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
  chroot "$rootfs" /usr/sbin/groupadd --gid 1000 node
  chroot "$rootfs" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --change 'CMD ["node"]' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' - "$base" >/dev/null
  rm -rf "$rootfs"
fi
check "base image runs Node 20" sh -c "podman run --rm ${oci[*]} $base node --version | grep -q '^v20\.'"

# 2. The image.
echo "== podman build (log: $work/build.log)"
if ! podman build "${oci[@]}" --network host --build-arg "NODE_IMAGE=$base" -t "$image" -f Dockerfile . >"$work/build.log" 2>&1; then
  tail -30 "$work/build.log" >&2
  exit 1
fi
check "image builds" podman image exists "$image"

# 3. Runs.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
nats-server -js -a 127.0.0.1 -p "$port" -sd "$work/nats" >"$work/nats.log" 2>&1 &
nats_pid=$!
for _ in $(seq 1 50); do grep -q "Server is ready" "$work/nats.log" && break; sleep 0.2; done
nats_url=nats://127.0.0.1:$port

run() { # name, podman-run options..., -- command...
  local name=$1
  shift
  containers+=("$name")
  podman run -d "${oci[@]}" --name "$name" --network host -e NATS_URL="$nats_url" -e FLEET_OPS_PORT=0 "$@" >/dev/null
}
wait_log() { # container, pattern, seconds
  for _ in $(seq 1 "$(($3 * 5))"); do podman logs "$1" 2>&1 | grep -q "$2" && return 0; sleep 0.2; done
  podman logs "$1" 2>&1 | tail -5 >&2
  return 1
}

run fleet-it-tools-default -e FLEET_TOOLS=bash -e FLEET_PARTITIONS=4 "$image" node services/tools/dist/main.js
check "tool runner with the engine's defaults: sandbox_unavailable" wait_log fleet-it-tools-default '"evt":"sandbox_unavailable"' 60
podman logs fleet-it-tools-default 2>&1 | grep '"evt":"sandbox_unavailable"' | head -1 | node -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const l=JSON.parse(s);console.log(`     check ${l.check}: ${l.reason}`)})'
check "its reason names what to set" sh -c \
  "podman logs fleet-it-tools-default 2>&1 | grep sandbox_unavailable | grep -q 'unconfined'"
# Only the sandboxed runner may take the bash call below.
podman rm -f fleet-it-tools-default >/dev/null

run fleet-it-tools --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
  --security-opt systempaths=unconfined -e FLEET_TOOLS=bash -e FLEET_PARTITIONS=4 -e FLEET_WORKSPACE=/workspace \
  "$image" node services/tools/dist/main.js
check "tool runner with compose's options: sandbox_ready" wait_log fleet-it-tools '"evt":"sandbox_ready"' 60

# A bash call through NATS, run by the sandboxed runner in the container.
call=$(
  NATS_URL=$nats_url node --conditions=@fleet/source --import tsx "$root/scripts/image-test-call.ts" 2>&1
) || true
echo "     bash call: $call"
check "a bash call runs in the container's sandbox (own PID namespace)" sh -c "echo '$call' | grep -q '^pid1=bwrap'"

run fleet-it-gateway -e FLEET_GATEWAY_PORT=18799 "$image" node services/gateway/dist/main.js
check "gateway answers /healthz" sh -c \
  'for _ in $(seq 1 150); do curl -fsS http://127.0.0.1:18799/healthz >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
