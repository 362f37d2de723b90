#!/usr/bin/env bash
# Tests the Python client as a user gets it: `pip install ./clients/python` into a fresh virtual
# environment (it has no dependencies; pip fetches only the build backend, setuptools), then its
# tests against the real service, which they start from dist/ (built here when missing).
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 --version
if [ ! -f dist/server.js ]; then
  echo "dist/server.js is missing: npm run build"
  npm run build
fi

venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check ./clients/python
(cd "$venv" && "$venv/bin/python" -c 'import compactor_client, sys; print("installed", compactor_client.__version__, compactor_client.__file__)')

COMPACTOR_CLIENT_INSTALLED=1 "$venv/bin/python" -m unittest discover -s clients/python/tests -v
