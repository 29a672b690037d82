#!/usr/bin/env bash
# The authorization-code tests drive Debian's Chromium with playwright-core (no browser download).
# Install it from Debian's packages when it is missing and we may (root with apt-get).
set -euo pipefail
# The tests launch /usr/bin/chromium itself (another chromium on the PATH, e.g. a snap, is not it).
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests…"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "Chromium is missing: install Debian's 'chromium' package (sudo apt-get install chromium) to run the browser tests." >&2
exit 1
