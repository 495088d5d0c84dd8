#!/usr/bin/env bash
# Installs the Debian 12 packages collsim needs. Idempotent: packages already present
# are not touched, and apt is only called when something is missing.
#
#   tools/setup.sh           what building and running the collsim command needs
#   tools/setup.sh --tests   that, and everything the test suite, the sanitizer pass and
#                            the fuzzer use (README command 2, CI)
#
# Each package says why it is here; docs/install.md has what each group costs.
set -euo pipefail

usage() { echo "usage: tools/setup.sh [--tests]" >&2; exit 2; }
with_tests=0
case "${1:-}" in
  "") ;;
  --tests) with_tests=1 ;;
  *) usage ;;
esac
(($# <= 1)) || usage

# Building and running the CLI.
packages=(
  g++ cmake ninja-build pkg-config
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  zlib1g-dev                          # timeline.json.gz
  libprotobuf-dev protobuf-compiler   # Chakra execution traces (built when found)
)
# The tests and the tools CI runs them with.
test_packages=(
  catch2
  libvalijson-dev  # the schema test checks scenario and topology files against scenarios/schema/
  chromium         # the report test opens report.html in headless Chromium
  procps           # pgrep, in the cuda-ipc fault test
  pybind11-dev python3-dev python3-pytest  # the Python module (import collsim) and its tests
  libopenmpi-dev openmpi-bin  # mpirun -n N collsim sweep (optional in the build; tested when found)
  clang libclang-rt-14-dev    # CI's sanitizer and libFuzzer build (libclang_rt.fuzzer is in libclang-rt-14-dev)
)
if ((with_tests)); then packages+=("${test_packages[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then exit 0; fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
