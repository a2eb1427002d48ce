#!/usr/bin/env bash
# Installs the real ACP agents used by `pnpm test:agents` into a cache outside the repo.
#   Qwen Code  -> $PHEBY_AGENTS_DIR/qwen   (npm @qwen-code/qwen-code, pinned)
#   Hermes     -> $PHEBY_AGENTS_DIR/hermes (PyPI hermes-agent[acp,mcp] in a virtualenv)
#   OpenCode   -> $PHEBY_AGENTS_DIR/opencode (npm opencode-ai, pinned; its native binary comes in the
#                 npm package opencode-linux-x64 and friends, nothing is downloaded from elsewhere)
#   Codex      -> $PHEBY_AGENTS_DIR/codex (npm @zed-industries/codex-acp: a Node shim around the native
#                 binary from @zed-industries/codex-acp-linux-x64, which keeps the pipes
#                 open when the shim dies)
#   Gemini CLI -> $PHEBY_AGENTS_DIR/gemini (npm @google/gemini-cli, pinned)
#   Claude Code-> $PHEBY_AGENTS_DIR/claude (npm @zed-industries/claude-code-acp; the Claude Code CLI
#                 comes inside its npm dependency @anthropic-ai/claude-agent-sdk)
# Idempotent: an agent already installed is left alone.
# Network calls carry timeouts and few retries, so an unreachable registry fails the run loudly
# within minutes instead of hanging it.
set -euo pipefail
DIR="${PHEBY_AGENTS_DIR:-$HOME/.cache/pheby-agents}"
QWEN_VERSION="0.24.4"
HERMES_VERSION="0.19.0"
OPENCODE_VERSION="1.18.33"
CODEX_ACP_VERSION="0.16.0"
GEMINI_VERSION="0.61.0"
CLAUDE_ACP_VERSION="0.16.2"
mkdir -p "$DIR"

# One pinned npm package into its own prefix, unless already there.
npm_agent() { # dir package version bin
  if [ ! -x "$DIR/$1/node_modules/.bin/$4" ]; then
    echo "installing $2@$3 into $DIR/$1"
    mkdir -p "$DIR/$1"
    (cd "$DIR/$1" && npm init -y >/dev/null && npm install --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=2 -E "$2@$3")
  fi
}
npm_agent qwen @qwen-code/qwen-code "$QWEN_VERSION" qwen
npm_agent opencode opencode-ai "$OPENCODE_VERSION" opencode
npm_agent codex @zed-industries/codex-acp "$CODEX_ACP_VERSION" codex-acp
npm_agent gemini @google/gemini-cli "$GEMINI_VERSION" gemini
npm_agent claude @zed-industries/claude-code-acp "$CLAUDE_ACP_VERSION" claude-code-acp

# The [mcp] extra lets Hermes load the MCP servers Pheby passes in session/new (Pheby's own
# tools: ask_user, schedules); a cache installed before it only gains the extra's packages.
if [ "${SKIP_HERMES:-}" != "1" ] && ! "$DIR/hermes/bin/python" -c "import acp, mcp" 2>/dev/null; then
  echo "installing hermes-agent[acp,mcp] into $DIR/hermes"
  [ -x "$DIR/hermes/bin/python" ] || python3 -m venv "$DIR/hermes"
  pip=("$DIR/hermes/bin/pip" --disable-pip-version-check --timeout 60 --retries 2)
  "${pip[@]}" install --quiet --upgrade pip
  "${pip[@]}" install --quiet "hermes-agent[acp,mcp]==$HERMES_VERSION"
fi
echo "agents ready in $DIR"
