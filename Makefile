# Tessera: the two commands a newcomer needs.
#   make demo   installs what is missing, builds, and runs `tessera demo`
#   make test   installs what is missing, builds, and runs every test with ctest
# More: make build | make test-asan (AddressSanitizer+UBSan) | make test-tsan (ThreadSanitizer,
# concurrent tests) | make check-packaging (a plain Release build; pip install in a fresh venv) |
# make bench | make install PREFIX=... | make format | make clean

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
TSAN_DIR   ?= build-tsan
RELEASE_DIR ?= build-release
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
# Release with assertions on: -O2 without -DNDEBUG. Warnings are errors in the project's own
# builds (this Makefile, CI); a plain `cmake -DCMAKE_BUILD_TYPE=Release` build leaves them warnings.
CMAKE_ARGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O2 \
  -DCMAKE_C_FLAGS_RELEASE=-O2 -DTESSERA_WERROR=ON
# ccache, when installed (install-deps.sh installs it), makes rebuilds and other clones cheap;
# paths under the clone are hashed relative to it, so two clones share their cache.
ifneq ($(shell command -v ccache),)
CMAKE_ARGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
export CCACHE_BASEDIR ?= $(CURDIR)
endif
CTEST_ARGS ?= --output-on-failure -j $(JOBS) --timeout 900
# One Python for everything: a venv in the build folder that `make deps` fills from PyPI
# (build_tools/python-requirements.txt). The bindings are built for it and every test that runs
# Python runs it; nothing is taken from, or installed into, the machine's own python3.
PYTHON_VENV ?= $(CURDIR)/$(BUILD_DIR)/pyenv
PYTHON ?= $(PYTHON_VENV)/bin/python3
PY_CMAKE_ARGS = -DPython_EXECUTABLE=$(PYTHON)

.PHONY: all deps python-deps configure build demo test test-asan test-tsan check-release check-pip \
  check-packaging bench install format clean

all: build

deps:
	@bash build_tools/install-deps.sh
	@$(MAKE) --no-print-directory python-deps

python-deps:
	@PYTHON_VENV=$(PYTHON_VENV) bash build_tools/install-python-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS)

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/tools/tessera demo

test: build
	ctest --test-dir $(BUILD_DIR) $(CTEST_ARGS)

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (no benchmarks).
test-asan: deps
	cmake -S . -B $(ASAN_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS) -DTESSERA_SANITIZE=address -DTESSERA_BUILD_BENCHMARKS=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) $(CTEST_ARGS) -LE 'slow|fuzz'

# The concurrent tests (ctest label "tsan") under ThreadSanitizer.
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS) -DTESSERA_SANITIZE=thread -DTESSERA_BUILD_BENCHMARKS=OFF
	cmake --build $(TSAN_DIR) -j $(JOBS) --target tsan_tests
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/build_tools/tsan.supp" \
	  ctest --test-dir $(TSAN_DIR) $(CTEST_ARGS) -L tsan

# What a package maintainer or an embedding project does: `cmake -DCMAKE_BUILD_TYPE=Release` with
# the default flags (-O3 -DNDEBUG), everything built, warnings as errors (so that it stays
# warning-free; TESSERA_WERROR is off by default).
check-release: deps
	cmake -S . -B $(RELEASE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON \
	  $(PY_CMAKE_ARGS) $(filter -DCMAKE_%_COMPILER_LAUNCHER=ccache,$(CMAKE_ARGS))
	cmake --build $(RELEASE_DIR) -j $(JOBS)

# `pip install ./bindings/python` in a fresh venv with build isolation, then the Megatron MLP
# compiled and run from Python (tests/packaging/pip_install.sh). scikit-build-core takes ccache,
# when there is one, from the CMAKE_ARGS environment variable.
check-pip: deps
	CMAKE_ARGS="$(filter -DCMAKE_%_COMPILER_LAUNCHER=ccache,$(CMAKE_ARGS))" \
	  bash tests/packaging/pip_install.sh $(PYTHON)

check-packaging: check-release check-pip

bench: build
	$(BUILD_DIR)/benchmarks/ifrt/reshard_benchmark

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(RELEASE_DIR)
