# Rustycage — the two commands a newcomer needs: `make run` and `make test`.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
GPU        ?= cpu
MODELS_DIR ?= $(HOME)/.rustycage/models
CMAKE_ARGS ?=

# ccache shares objects between clones: paths under the clone are hashed relative to it, and the
# directory a compile ran in is left out (a fresh clone elsewhere, as CI makes, then hits the cache).
export CCACHE_BASEDIR  := $(CURDIR)
export CCACHE_NOHASHDIR := 1

ifeq ($(GPU),cuda)
  CMAKE_ARGS += -DRUSTYCAGE_CUDA=ON
else ifeq ($(GPU),vulkan)
  CMAKE_ARGS += -DRUSTYCAGE_VULKAN=ON
else ifeq ($(GPU),metal)
  CMAKE_ARGS += -DRUSTYCAGE_METAL=ON
endif

.PHONY: all setup configure build test run clean sanitize sanitize-quick fleet-demo fuzz soak

all: build

setup:
	@scripts/setup.sh $(if $(filter vulkan,$(GPU)),vulkan)

$(BUILD)/build.ninja: CMakeLists.txt
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: setup $(BUILD)/build.ninja

build: configure
	@cmake --build $(BUILD)

test: build
	@scripts/test.sh $(BUILD)

# Builds, creates the demo model (random weights: its text is gibberish) and serves it.
run: build
	@mkdir -p $(MODELS_DIR)
	@[ -f $(MODELS_DIR)/demo.gguf ] || $(BUILD)/bin/rustycage-mkmodel --preset tiny-chat --out $(MODELS_DIR)/demo.gguf
	@echo
	@echo "Rustycage is starting on the demo model (random weights: it answers in gibberish)."
	@echo "Talk to it (OpenAI API on :8080, Ollama API on :11434):"
	@echo "  curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \\"
	@echo "       -d '{\"model\":\"demo\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}],\"max_tokens\":32}'"
	@echo "  $(BUILD)/bin/rustycage run demo 'Hello!' --models-dir $(MODELS_DIR)"
	@echo "Or open the console: http://127.0.0.1:8080/ui/"
	@echo "Stop with Ctrl-C."
	@echo
	@exec $(BUILD)/bin/rustycage serve --models-dir $(MODELS_DIR) --preload demo

# A local fleet (docs/FLEET.md): 3 etcd members and 3 agents on loopback, then `rustycage fleet status`.
fleet-demo: build
	@scripts/fleet-demo.sh $(BUILD)

# Our code under AddressSanitizer + UBSan (llama.cpp itself stays a normal build), compiled once by
# clang with libFuzzer's coverage instrumentation: `make sanitize` runs the whole suite on it and
# `make fuzz` builds the libFuzzer targets (fuzz/README.md) in the same tree and runs each for
# FUZZ_SECONDS — so CI compiles our code instrumented once, not twice.
ASAN_BUILD   ?= build-asan
ASAN_ARGS    := -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRUSTYCAGE_FUZZ=ON -DRUSTYCAGE_TESTS=ON -DRUSTYCAGE_BENCH=OFF
FUZZ_SECONDS ?= 60
# The C++ suites (ctest) run instrumented; they drive the real server binary over HTTP, so the
# request path runs under the sanitizers too. The npm client and browser suites, which check
# protocol shapes rather than memory safety, run in `make test` only.
sanitize:
	@$(MAKE) build BUILD=$(ASAN_BUILD) CMAKE_ARGS="$(ASAN_ARGS)"
	@ASAN_OPTIONS=detect_leaks=1:handle_segv=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --test-dir $(ASAN_BUILD) --output-on-failure -j 2 --timeout 900

# CI's instrumented leg: the unit suites that need no model (the parsers, the KV host/disk stores and
# planner, the model store's transactions, the Hub readers, UTF-8 and byte sizes). Their code is what
# the fuzz targets compile anyway, so on top of `make fuzz` this adds little more than the tests.
SANITIZE_QUICK := util_test kv_test metrics_test models_test engine_unit_test http_unit_test api_unit_test store_test hub_test
sanitize-quick:
	@$(MAKE) configure BUILD=$(ASAN_BUILD) CMAKE_ARGS="$(ASAN_ARGS)"
	@cmake --build $(ASAN_BUILD) --target $(SANITIZE_QUICK) -j 2
	@set -e; for t in $(SANITIZE_QUICK); do echo "[sanitize] $$t"; \
	    ASAN_OPTIONS=detect_leaks=1:handle_segv=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    $(ASAN_BUILD)/bin/$$t --gtest_brief=1; done

fuzz: setup
	@scripts/fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

# 64 concurrent mixed clients against a real server for SOAK_SECONDS (tests/soak/README.md).
SOAK_SECONDS ?= 600
soak: build
	@SOAK_SECONDS=$(SOAK_SECONDS) scripts/soak.sh $(BUILD)

clean:
	rm -rf $(BUILD)

# Benchmarks against llama-server built from the same pinned llama.cpp (bench/README.md,
# docs/BENCHMARKS.md). `make bench` is the quick mode; GPU=cuda runs it on the CUDA backend.
BENCH_ARGS ?=
BENCH_GPU = $(if $(filter-out cpu,$(GPU)),--gpu $(GPU))
.PHONY: bench bench-full bench-kv
bench: build
	@bench/run.sh --quick --build $(BUILD) $(BENCH_GPU) $(BENCH_ARGS)

bench-full: build
	@bench/run.sh --full --build $(BUILD) $(BENCH_GPU) $(BENCH_ARGS)

bench-kv: build
	@bench/run.sh --kv-full --build $(BUILD) $(BENCH_GPU) $(BENCH_ARGS)

# Releases (docs/RELEASING.md): dist/rustycage-VERSION-linux-x86_64-{cpu,vulkan,cuda11,cuda13}.tar.gz,
# install.sh and SHA256SUMS. Every artifact is built in a Debian bullseye root (glibc 2.31).
# Heavy (every CPU variant of ggml, the Vulkan shaders, CUDA kernels): not part of `make test`.
# FLAVOURS=cpu,vulkan,cuda11,cuda13 picks them (auto: cpu and vulkan).
RELEASE_FLAVOURS ?= auto
FLAVOURS ?= $(RELEASE_FLAVOURS)
.PHONY: release test-release test-vulkan
release:
	@scripts/setup.sh release vulkan
	@scripts/release.sh --flavours $(FLAVOURS) --out dist

# The release proofs: ELF checks (GLIBC_ <= 2.31 for cpu), `rustycage run` on a generated model and
# the installer (install, no-op rerun, upgrade keeping rustycage.env, uninstall) in bullseye roots.
test-release: release
	@tests/release/test_release.sh dist

# The engine, KV tier and API tests on the Vulkan backend, on Mesa's lavapipe (a Vulkan CPU device).
# Our objects do not depend on the backend: build-vulkan reuses build/'s cache entries (CCACHE_* above).
test-vulkan:
	@scripts/setup.sh vulkan
	@scripts/vulkan-headers.sh >/dev/null
	@$(MAKE) build BUILD=build-vulkan GPU=vulkan \
	    CMAKE_ARGS="-DRUSTYCAGE_VULKAN=ON -DOPENSSL_USE_STATIC_LIBS=TRUE -DCMAKE_EXE_LINKER_FLAGS='-static-libstdc++ -static-libgcc'"
	@tests/release/test_vulkan.sh build-vulkan
