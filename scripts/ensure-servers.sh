#!/usr/bin/env bash
# Shared set-up step of `npm test` and `npm start`: makes sure nats-server, redis-server and (on
# Linux) bubblewrap and chromium exist; bubblewrap is the sandbox of every process a tool starts,
# chromium (/usr/bin/chromium) runs the web console's browser tests.
# Root (or passwordless sudo) on Debian/Ubuntu: installs them with apt-get, saying so first.
# Elsewhere: prints the exact install command and exits non-zero (tests may still use testcontainers
# where a container runtime exists; set FLEET_ALLOW_CONTAINERS=1 to skip this check).
set -euo pipefail
missing=()
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
if [ "$(uname)" = "Linux" ]; then
  command -v bwrap >/dev/null 2>&1 || [ -x /usr/bin/bwrap ] || missing+=(bubblewrap)
  [ -x "${FLEET_CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
fi
# tmux is optional: the tests that drive `fleet chat` as a person would are skipped without it.
optional=()
command -v tmux >/dev/null 2>&1 || optional+=(tmux)
if [ ${#missing[@]} -eq 0 ]; then
  if [ ${#optional[@]} -gt 0 ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "fleet: installing ${optional[*]} with apt-get (optional, for the chat tests)" >&2
    (apt-get install -y -qq "${optional[@]}" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "${optional[@]}" >&2; }) ||
      echo "fleet: could not install ${optional[*]}; the chat tests will be skipped" >&2
  fi
  exit 0
fi
[ "${FLEET_ALLOW_CONTAINERS:-}" = "1" ] && { echo "fleet: ${missing[*]} missing; relying on testcontainers" >&2; exit 0; }
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
  if [ "$sudo" != none ]; then
    echo "fleet: installing ${missing[*]} with apt-get" >&2
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" "${optional[@]}" >&2
    exit 0
  fi
  echo "fleet: missing ${missing[*]}. Install with: sudo apt-get install -y ${missing[*]}" >&2
elif [ "$(uname)" = "Darwin" ]; then
  echo "fleet: missing ${missing[*]}. Install with: brew install nats-server redis" >&2
else
  echo "fleet: missing ${missing[*]}. Install nats-server (https://nats.io), redis-server, bubblewrap and chromium with your package manager." >&2
fi
exit 1
