#!/usr/bin/env bash
# Runs test/keychain.test.ts against a real Secret Service: gnome-keyring, unlocked with an empty
# password, inside a private D-Bus session (nothing of the user's own keyring is touched).
# Needs the apt packages gnome-keyring and dbus-x11 (or dbus) for dbus-run-session.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in dbus-run-session gnome-keyring-daemon; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "keychain test skipped: $tool is not installed (apt-get install -y gnome-keyring dbus-x11)" >&2
    exec npx vitest run test/keychain.test.ts
  fi
done
exec dbus-run-session -- bash -c "echo '' | gnome-keyring-daemon --unlock --components=secrets >/dev/null; SVC_TEST_KEYCHAIN=1 npx vitest run test/keychain.test.ts"
