#!/usr/bin/env bash
# Packs this machine's redis-server and the shared libraries it loads beyond glibc and the C++ runtime into
# build/gpu-redis/ for run_multi_gpu.sh's worker stage (the GPU machine has no redis-server). Carry build/gpu-redis
# with build/gpu; the script finds build/gpu-redis/redis-server and puts build/gpu-redis/lib on its library path.
set -euo pipefail
cd "$(dirname "$0")/../.."
rs="$(command -v redis-server)" || { echo "pack_redis: no redis-server here (apt-get install redis-server)"; exit 1; }
rm -rf build/gpu-redis && mkdir -p build/gpu-redis/lib
cp -L "$rs" build/gpu-redis/redis-server
ldd "$rs" | awk '$3 ~ /^\// {print $3}' \
  | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' \
  | xargs -r -I{} cp -L {} build/gpu-redis/lib/
strip build/gpu-redis/redis-server 2>/dev/null || true
"$rs" --version > build/gpu-redis/VERSION.txt
du -sh build/gpu-redis
