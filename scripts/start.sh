#!/usr/bin/env bash
# `npm start`: make sure nats-server and redis-server exist, build if needed, then run `fleet up` in the
# background (its output goes to .fleet/up.log) and `fleet chat` on a new session in the foreground.
# Quitting the chat (Ctrl-C twice, /quit or Ctrl-D) stops the whole stack.
# With ANTHROPIC_API_KEY the agent is Claude; without it, the offline scripted demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bash scripts/ensure-servers.sh

home=${FLEET_HOME:-$root/.fleet}
mkdir -p "$home"
export FLEET_HOME=$home

# Build if needed (tsc -b is incremental: a no-op when dist/ is up to date). A failed build falls back
# to running the TypeScript sources directly.
if ! npx tsc -b >"$home/build.log" 2>&1; then
  echo "fleet: the build failed (see $home/build.log); running from the TypeScript sources instead" >&2
  export FLEET_FROM_SOURCE=1
fi
# The web console (static files the gateway serves at /).
if ! npm run build -w @fleet/console >>"$home/build.log" 2>&1; then
  echo "fleet: the web console build failed (see $home/build.log); the gateway will say so at /" >&2
fi

# The tools' workspace: by default a sandbox under .fleet/, seeded with this README so the demo has a
# file to read and does not write into the repository.
if [ -z "${FLEET_WORKSPACE:-}" ]; then
  export FLEET_WORKSPACE=$home/workspace
  mkdir -p "$FLEET_WORKSPACE"
  [ -e "$FLEET_WORKSPACE/README.md" ] || cp README.md "$FLEET_WORKSPACE/README.md"
fi

fleet=(node "$root/libs/client/bin/fleet.js")

# Not through a function or subshell: $! must be the `fleet up` process itself, so SIGTERM reaches it.
"${fleet[@]}" up >"$home/up.log" 2>&1 &
up_pid=$!
stop_stack() {
  if kill -0 "$up_pid" 2>/dev/null; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
}
trap stop_stack EXIT
trap 'exit 130' INT TERM

# `fleet up` prints its banner (where everything listens) once the stack file is written.
for _ in $(seq 1 300); do
  grep -q "Ctrl-C stops everything" "$home/up.log" 2>/dev/null && break
  if ! kill -0 "$up_pid" 2>/dev/null; then
    cat "$home/up.log" >&2
    echo "fleet: fleet up exited before the stack was ready" >&2
    exit 1
  fi
  sleep 0.2
done
grep -v "Ctrl-C stops everything" "$home/up.log" || true
echo "(stack output continues in $home/up.log; quitting the chat stops the stack)"
echo

"${fleet[@]}" chat
