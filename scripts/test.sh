#!/usr/bin/env bash
# The test command: makes sure nats-server and redis-server exist, runs the whole vitest suite,
# and ends with the plain summary line `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-servers.sh || exit 1
out=$(mktemp -t fleet-vitest-XXXXXX.json)
npx vitest run --reporter=default --reporter=json --outputFile.json="$out" "$@"
code=$?
if [ -s "$out" ]; then
  node -e 'const r=require(process.argv[1]);console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`+(r.numPendingTests?`, ${r.numPendingTests} skipped`:""))' "$out"
fi
rm -f "$out"
exit $code
