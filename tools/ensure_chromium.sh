#!/usr/bin/env bash
# Make sure a system Chromium exists for tests/test_browser.py (the real-browser widget test).
# Idempotent: exits 0 at once when Chromium is already installed; otherwise installs the distribution's
# `chromium` package with apt-get when running as root. Never downloads a browser any other way.
set -euo pipefail

for candidate in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
        echo "ensure_chromium: found $candidate ($("$candidate" --version 2>/dev/null || echo 'version unknown'))"
        exit 0
    fi
done

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: Chromium is missing and this is not root; install it with: sudo apt-get install -y chromium" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: Chromium is missing and apt-get is not available; install Chromium with the system package manager" >&2
    exit 1
fi

echo "ensure_chromium: Chromium is missing; installing the system package (apt-get install chromium)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium
if [ -x /usr/bin/chromium ]; then
    echo "ensure_chromium: installed $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
else
    echo "ensure_chromium: apt-get finished but /usr/bin/chromium does not exist" >&2
    exit 1
fi
