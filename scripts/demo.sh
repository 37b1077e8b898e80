#!/usr/bin/env bash
# The README's demo: a workspace in ./demo-workspace, a few memories, a search.
# Run it after installing (see README Quickstart); it only touches ./demo-workspace and the
# index cache (~/.cache/miniclaw/).
set -euo pipefail
cd "$(dirname "$0")/.."
miniclaw=".venv/bin/miniclaw"
ws="demo-workspace"
run() { printf '\n$'; printf ' %q' "$@"; printf '\n'; "$@"; }

rm -rf "$ws"
run "$miniclaw" --workspace "$ws" init
run "$miniclaw" --workspace "$ws" memory add "Prefers dark roast coffee, no sugar" --long --category preference --tag food
run "$miniclaw" --workspace "$ws" memory add "Project Atlas deadline moved to March 3" --long --category decision --tag atlas
run "$miniclaw" --workspace "$ws" memory add "Met Sam about the Atlas budget: 40k approved, coffee next week"
run "$miniclaw" --workspace "$ws" memory add "Dentist appointment on Friday <private>insurance id 99-1234</private>"
run "$miniclaw" --workspace "$ws" memory rank -q "atlas budget" -n 5
run "$miniclaw" --workspace "$ws" memory rank -q "insurance"
