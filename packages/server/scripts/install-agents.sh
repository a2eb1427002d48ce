#!/usr/bin/env bash
# Installs the real ACP agents used by `pnpm test:agents` into a cache outside the repo.
#   Qwen Code  -> $PHEBY_AGENTS_DIR/qwen   (npm @qwen-code/qwen-code, pinned)
#   Hermes     -> $PHEBY_AGENTS_DIR/hermes (PyPI hermes-agent in a virtualenv)
# Idempotent: an agent already installed is left alone.
# Network calls carry timeouts and few retries, so an unreachable registry fails the run loudly
# within minutes instead of hanging it.
set -euo pipefail
DIR="${PHEBY_AGENTS_DIR:-$HOME/.cache/pheby-agents}"
QWEN_VERSION="0.24.4"
HERMES_VERSION="0.19.0"
mkdir -p "$DIR"

if [ ! -x "$DIR/qwen/node_modules/.bin/qwen" ]; then
  echo "installing @qwen-code/qwen-code@$QWEN_VERSION into $DIR/qwen"
  mkdir -p "$DIR/qwen"
  (cd "$DIR/qwen" && npm init -y >/dev/null && npm install --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=2 -E "@qwen-code/qwen-code@$QWEN_VERSION")
fi

if [ "${SKIP_HERMES:-}" != "1" ] && ! "$DIR/hermes/bin/python" -c "import acp" 2>/dev/null; then
  echo "installing hermes-agent into $DIR/hermes"
  [ -x "$DIR/hermes/bin/python" ] || python3 -m venv "$DIR/hermes"
  pip=("$DIR/hermes/bin/pip" --disable-pip-version-check --timeout 60 --retries 2)
  "${pip[@]}" install --quiet --upgrade pip
  "${pip[@]}" install --quiet "hermes-agent[acp]==$HERMES_VERSION"
fi
echo "agents ready in $DIR"
