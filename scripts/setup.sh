#!/usr/bin/env bash
# Sets up a fresh Debian machine that has Node.js and npm: the system packages sandboxes need,
# the npm dependencies, and the compiled service. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# What sandboxes need, and the data stack every python sandbox imports from (Debian packages:
# numpy, pandas, matplotlib, scipy, scikit-learn, sympy, pillow, requests, beautifulsoup4, lxml,
# openpyxl, seaborn, statsmodels, networkx, pyyaml). Checked with dpkg-query first, so a machine
# that has everything does not touch apt.
DATA_PACKAGES=(python3-numpy python3-pandas python3-matplotlib python3-scipy python3-sklearn python3-sympy
  python3-pil python3-requests python3-bs4 python3-lxml python3-openpyxl python3-seaborn python3-statsmodels
  python3-networkx python3-yaml)
need=()
[ -x /usr/bin/bwrap ] || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
command -v mount >/dev/null || need+=(mount)
# The browser the dashboard's tests drive (playwright-core with this executable; nothing downloaded).
[ -x /usr/bin/chromium ] || need+=(chromium)
# Custom templates (src/templates/): skopeo pulls images, umoci unpacks them; buildah is for
# Dockerfile builds; docker-registry is the local registry the template tests push their images to.
[ -x /usr/bin/skopeo ] || need+=(skopeo)
[ -x /usr/bin/umoci ] || need+=(umoci)
[ -x /usr/bin/buildah ] || need+=(buildah)
[ -x /usr/bin/docker-registry ] || need+=(docker-registry)
# PostgreSQL 15 for durable state with AGENTBOX_DATABASE_URL (docs/cluster.md): the tests start a
# private server from its programs (test/helpers/postgres.ts); the package's own service is not used.
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
[ -x /usr/lib/postgresql/15/bin/psql ] || need+=(postgresql-client-15)
# The cluster's coordination (src/cluster/): its tests start a private Redis 7 on a free port.
[ -x /usr/bin/redis-server ] || need+=(redis-server)
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${DATA_PACKAGES[@]}" 2>/dev/null | awk '$1 == "ii" { print $2 }' || true)
for pkg in "${DATA_PACKAGES[@]}"; do
  grep -qx "$pkg" <<<"$installed" || need+=("$pkg")
done
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
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# matplotlib's font list, built once here (it takes seconds) into a read-only place every sandbox
# sees (/usr is bound read-only into sandboxes), and its configuration (Debian's matplotlib looks
# for /etc/matplotlibrc, which sandboxes do not have). The in-sandbox supervisor links both into
# each sandbox's private MPLCONFIGDIR, so no sandbox ever rebuilds the list. Fonts a sandbox cannot
# see (anything outside /usr, e.g. /usr/local) are left out of the list.
MPL_CACHE=/usr/share/sandbox/matplotlib
if [ "$(id -u)" -eq 0 ] && ! [ -f "$MPL_CACHE/matplotlibrc" ]; then
  mkdir -p "$MPL_CACHE"
  printf '# Sandboxes have no display: the non-interactive backend.\nbackend: Agg\n' >"$MPL_CACHE/matplotlibrc"
  chmod a+r "$MPL_CACHE/matplotlibrc"
fi
# Rebuilt when the installed matplotlib changes (its font list format is versioned).
mpl_version=$(dpkg-query -W -f='${Version}' python3-matplotlib 2>/dev/null || true)
if [ "$(id -u)" -eq 0 ] && { ! ls "$MPL_CACHE"/fontlist-v*.json >/dev/null 2>&1 || [ "$(cat "$MPL_CACHE/.matplotlib-version" 2>/dev/null)" != "$mpl_version" ]; }; then
  echo "setup: building matplotlib's font cache in $MPL_CACHE"
  mkdir -p "$MPL_CACHE"
  rm -f "$MPL_CACHE"/fontlist-v*.json
  env -i PATH=/usr/bin:/bin HOME=/nonexistent MPLCONFIGDIR="$MPL_CACHE" MPLBACKEND=Agg /usr/bin/python3 -I -c '
import json, os, glob
import matplotlib.font_manager as fm
path = glob.glob(os.path.join(os.environ["MPLCONFIGDIR"], "fontlist-v*.json"))[0]
with open(path) as f:
    data = json.load(f)
visible = lambda e: e["fname"].startswith("/usr/") and not e["fname"].startswith("/usr/local/")
data["ttflist"] = [e for e in data["ttflist"] if visible(e)]
data["afmlist"] = [e for e in data["afmlist"] if visible(e)]
with open(path + ".tmp", "w") as f:
    json.dump(data, f, indent=2)
os.replace(path + ".tmp", path)
'
  printf '%s\n' "$mpl_version" >"$MPL_CACHE/.matplotlib-version"
  chmod -R a+rX "$MPL_CACHE"
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is required (found $(node --version))" >&2
  exit 1
fi

npm install --no-audit --no-fund --loglevel=error
npm run build --silent
# The dashboard: static files in web/dist, served by the service at /.
npm run build:web --silent
echo "setup: done"
