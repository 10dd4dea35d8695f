#!/bin/sh
# Builds a real peer for tollgate: llama.cpp's llama-server (CPU), from the
# llama.cpp source that npm's node-llama-cpp package bundles, and a tiny
# random-weight llama model whose byte and control tokens are unreachable
# (so every answer is valid UTF-8). About 30 minutes on 2 cores; not part of
# .ci/run. Needs npm, cmake, g++, git and Debian's python3-numpy.
#   usage: bench/peers/build.sh [DIR]   (default DIR: $HOME/.cache/tollgate-peers)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$HOME/.cache/tollgate-peers}
version=3.21.1
mkdir -p "$dir/bin"
cd "$dir"
if [ -x bin/llama-server ] && [ -f tiny.gguf ]; then
	echo "already built: $dir/bin/llama-server, $dir/tiny.gguf"
	exit 0
fi
[ -f "node-llama-cpp-$version.tgz" ] || npm pack "node-llama-cpp@$version"
mkdir -p nlc && tar -xzf "node-llama-cpp-$version.tgz" -C nlc
[ -d llama.cpp ] || git clone -q nlc/package/llama/gitRelease.bundle llama.cpp
cd llama.cpp
cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
cmake --build build --target llama-server -j"$(nproc)"
cp -a build/bin/llama-server build/bin/lib*.so* "$dir/bin/"
PYTHONPATH="$dir/llama.cpp/gguf-py" /usr/bin/python3 "$here/make_tiny_gguf.py" \
	models/ggml-vocab-llama-spm.gguf "$dir/tiny.gguf" --n-ctx 8192 --suppress-eos
echo "built: $dir/bin/llama-server, $dir/tiny.gguf"
