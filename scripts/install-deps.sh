#!/usr/bin/env bash
# Installs the Debian packages xfunc builds with (only those missing). Needs root (or sudo).
set -euo pipefail
pkgs=(g++ cmake make libboost-dev libxtensor-dev libxtensor-blas-dev libxsimd-dev libopenblas-dev catch2 libbenchmark-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "xfunc: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi
