#!/usr/bin/env bash
# Installs every Debian package collsim needs to build and test. Idempotent:
# packages already present are not touched, and apt is only called when needed.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  catch2
  libprotobuf-dev protobuf-compiler  # Chakra execution traces (optional: built when found)
  zlib1g-dev  # timeline.json.gz
  libvalijson-dev  # the schema test checks scenario and topology files against scenarios/schema/
  chromium  # the report test opens report.html in headless Chromium
  procps    # pgrep, in the cuda-ipc fault test
  pybind11-dev python3-dev python3-pytest  # the Python module (import collsim) and its tests
  libopenmpi-dev openmpi-bin  # mpirun -n N collsim sweep (optional in the build; tested when found)
  clang libclang-rt-14-dev  # the libFuzzer target (libclang_rt.fuzzer is in libclang-rt-14-dev)
)

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
