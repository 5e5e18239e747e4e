#!/usr/bin/env bash
# Sets up a fresh Debian machine that has Node.js and npm: the system packages sandboxes need,
# the npm dependencies, and the compiled service. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/bin/bwrap ] || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
command -v mount >/dev/null || need+=(mount)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing system packages: ${need[*]}; run as root or install them with apt-get" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "setup: missing system packages: ${need[*]} (and no apt-get here to install them)" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is required (found $(node --version))" >&2
  exit 1
fi

npm install --no-audit --no-fund --loglevel=error
npm run build --silent
echo "setup: done"
